#!/bin/sh
# Example Slurm Epilog (slurm.conf: Epilog=/etc/slurm/epilog.d/50-rigaudit.sh): the gate after each job,
# so a GPU that a job broke (Xid, ECC, fallen off the bus) takes no next job. With --drain a node with a
# problem is drained with rigaudit's reason; the epilog itself always succeeds.
exec /usr/local/sbin/rigaudit-health --mode epilog --drain -- --only gpu,pcie,nvlink,promised,expect --deadline 20
