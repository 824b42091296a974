"""Fleet audits: many hosts over SSH or Slurm, audited here with one version of the rules.

``cli`` (arguments for ``rigaudit audit --hosts/--slurm``), ``runner`` (collection, bounded
concurrency, timeouts, events), ``worker`` (unpack and audit one snapshot, in worker processes),
``analysis`` (matrix, outliers, grouped plan), ``report`` (the fleet's system-improve.md),
``node`` (the node's side: ``rigaudit snapshot --stdout``).
"""
