"""Whether the inference servers here talk to other nodes: what decides if GPUDirect RDMA carries anything.

Single-node tensor parallelism never crosses the NICs (NVLink or PCIe inside the host). Traffic leaves the node for
multi-node tensor, pipeline or data parallelism and for disaggregated prefill/decode KV transfers; servers say so on
their command line (``--nnodes 2``, ``--dist-init-addr``, ``--kv-transfer-config``, ``--disaggregation-mode``...) or
in their environment (``NCCL_IB_HCA``, ``NCCL_NET``, ``FI_PROVIDER=efa``, a ``MASTER_ADDR`` of another host). A Ray
node's raylet (the server instance of vLLM's Ray workers) whose GCS is another host's (``--gcs-address=HEAD:6379``
beside ``--node_ip_address=SELF``) is a worker node of a multi-node cluster.
"""

from __future__ import annotations

from rigaudit.agents.facts.processes import find_servers, server_root, split_cmdline
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

_FLAGS = (
    "--dist-init-addr",
    "--kv-transfer-config",
    "--disaggregation-mode",
    "--disaggregation-ib-device",
    "--data-parallel-address",
    "--headless",
    "--master-addr",
    "--node-rank",
)
_COUNTS = ("--nnodes", "--num-nodes")
_ENV = ("NCCL_IB_HCA", "NCCL_NET", "NCCL_IB_GID_INDEX", "UCX_NET_DEVICES", "FI_PROVIDER", "NCCL_NET_PLUGIN")
_LOCAL = ("", "localhost", "127.0.0.1", "::1")


class Internode(Record):
    servers: int
    """Inference servers found (0: nothing to judge by)."""
    signals: tuple[str, ...]
    """What says a server talks to other nodes (``pid 3120: NCCL_IB_HCA``)."""
    refs: tuple[str, ...]

    @property
    def used(self) -> bool | None:
        """True: a server crosses nodes; False: servers found, none does; None: no server to tell by."""
        return True if self.signals else (False if self.servers else None)


def _values(argv: tuple[str, ...]) -> dict[str, str]:
    """``--flag=value`` and ``--flag value`` pairs of a command line."""
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        if flag.startswith("--"):
            out[flag] = value if sep else (argv[i + 1] if i + 1 < len(argv) else "")
    return out


def _ray_head_elsewhere(argv: tuple[str, ...]) -> list[str]:
    values = _values(argv)
    head = values.get("--gcs-address", "").rpartition(":")[0].strip("[]")
    own = values.get("--node_ip_address", "")
    return [f"--gcs-address {head} (this node {own})"] if head and head not in (*_LOCAL, own) and own else []


def _argv_signals(argv: tuple[str, ...]) -> list[str]:
    found = _ray_head_elsewhere(argv)
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        text = value if sep else (argv[i + 1] if i + 1 < len(argv) else "")
        if flag in _FLAGS:
            found.append(flag)
        elif flag in _COUNTS and text.isdecimal() and int(text) > 1:
            found.append(f"{flag} {text}")
    return found


def _env_signals(environ: str | None) -> list[str]:
    env = dict(item.partition("=")[::2] for item in (environ or "").split("\0") if "=" in item)
    found = [k for k in _ENV if env.get(k, "").strip()]
    if env.get("MASTER_ADDR", "").strip() not in _LOCAL:
        found.append("MASTER_ADDR")
    return found


async def _instance_argv(probe: Probe, pid: int, argv: tuple[str, ...]) -> tuple[str, ...]:
    """A Ray actor's command line is its title: its server instance's (the node's raylet) names the cluster's head."""
    if not argv or not argv[0].startswith("ray::"):
        return argv
    root = await server_root(probe, pid)
    if root is None or root == pid:
        return argv
    return split_cmdline((await probe.read(f"/proc/{root}/cmdline")).data) or argv


async def collect_internode(probe: Probe) -> Internode:
    scan = await find_servers(probe)
    environs = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers])
    argvs = await probe.gather(*[lambda s=s: _instance_argv(probe, s.pid, s.argv) for s in scan.servers])
    signals = []
    for server, argv, environ in zip(scan.servers, argvs, environs, strict=True):
        for what in _argv_signals(argv) + _env_signals(environ.text() if environ.ok else None):
            signals.append(f"pid {server.pid}: {what}")
    refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in scan.servers)
    return Internode(len(scan.servers), tuple(dict.fromkeys(signals)), refs)
