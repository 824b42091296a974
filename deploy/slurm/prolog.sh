#!/bin/sh
# Example Slurm Prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/50-rigaudit.sh): the gate before each job.
# A prolog runs inside the job's launch, so keep it to the fast areas that decide whether a job may run
# here. With --drain a node with a problem is drained with rigaudit's reason and the prolog fails, so
# Slurm requeues the job elsewhere; "could not check" lets the job run and is only logged.
exec /usr/local/sbin/rigaudit-health --mode prolog --drain -- --only pcie,gpu,driver,nvlink,expect --deadline 10
