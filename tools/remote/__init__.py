"""Reaching other machines with the engines their owners already run: OpenSSH and Slurm.

``transport`` (ssh argv, the node's sh script), ``session`` (one node over one pipe), ``node_server`` and
``protocol`` (the stdlib-only node side, sent as the zipapp ``payload``), ``client`` (RemoteHost),
``tarstream`` (snapshots on the wire), ``framing`` and ``slurm`` (srun, one task per node).
Nothing here knows about agents or the orchestrator.
"""
