"""Whether the inference servers here talk to other nodes: what decides if GPUDirect RDMA carries anything.

Single-node tensor parallelism never crosses the NICs (NVLink or PCIe inside the host). Traffic leaves the node for
multi-node tensor, pipeline or data parallelism and for disaggregated prefill/decode KV transfers; servers say so on
their command line (``--nnodes 2``, ``--dist-init-addr``, ``--kv-transfer-config``, ``--disaggregation-mode``...) or
in their environment (``NCCL_IB_HCA``, ``NCCL_NET``, ``FI_PROVIDER=efa``, a ``MASTER_ADDR`` of another host).
"""

from __future__ import annotations

from rigaudit.agents.facts.processes import find_servers
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


def _argv_signals(argv: tuple[str, ...]) -> list[str]:
    found = []
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        text = value if sep else (argv[i + 1] if i + 1 < len(argv) else "")
        if flag in _FLAGS:
            found.append(flag)
        elif flag in _COUNTS and text.isdigit() and int(text) > 1:
            found.append(f"{flag} {text}")
    return found


def _env_signals(environ: str | None) -> list[str]:
    env = dict(item.partition("=")[::2] for item in (environ or "").split("\0") if "=" in item)
    found = [k for k in _ENV if env.get(k, "").strip()]
    if env.get("MASTER_ADDR", "").strip() not in _LOCAL:
        found.append("MASTER_ADDR")
    return found


async def collect_internode(probe: Probe) -> Internode:
    scan = await find_servers(probe)
    environs = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers])
    signals = []
    for server, environ in zip(scan.servers, environs, strict=True):
        for what in _argv_signals(server.argv) + _env_signals(environ.text() if environ.ok else None):
            signals.append(f"pid {server.pid}: {what}")
    refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in scan.servers)
    return Internode(len(scan.servers), tuple(dict.fromkeys(signals)), refs)
