#!/bin/sh
# Example Slurm Epilog (slurm.conf: Epilog=/etc/slurm/epilog.d/50-rigaudit.sh): the gate after each job,
# so a GPU that a job broke (Xid, ECC, fallen off the bus) takes no next job. With --drain a node with a
# problem is drained with rigaudit's reason; the epilog itself always succeeds. cuda.memory_in_use drains
# for GPU memory the ended job left behind (a process whose job is gone, memory no process holds), never
# for another job's process that still runs.
exec /usr/local/sbin/rigaudit-health --mode epilog --drain -- --only gpu,pcie,nvlink,promised,expect,cuda.memory_in_use --deadline 20
