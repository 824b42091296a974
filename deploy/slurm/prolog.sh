#!/bin/sh
# Example Slurm Prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/50-rigaudit.sh): the gate before each job.
# A prolog runs inside the job's launch, so keep it to the fast areas that decide whether a job may run
# here. With --drain a node with a problem is drained with rigaudit's reason and the prolog fails: Slurm
# requeues a batch job HELD (set SchedulerParameters=nohold_on_prolog_fail for it to start elsewhere) and
# fails an interactive one (docs/fleet.md, "What Slurm does when the prolog fails"); "could not check"
# lets the job run and is only logged.
exec /usr/local/sbin/rigaudit-health --mode prolog --drain -- --only pcie,gpu,driver,nvlink,promised,expect --deadline 10
