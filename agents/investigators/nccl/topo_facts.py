"""What nccl.topo_file reads: the NCCL topology file each server's NCCL loads, and whether Azure's is there.

NCCL takes ``NCCL_TOPO_FILE`` from the process's environment first, then from ``~/.nccl.conf``, then from
``/etc/nccl.conf`` (each in the server's own filesystem: a container reads its image's files). Azure's HPC images ship
the topology file of each ND size (``/opt/microsoft/ndv5-topo.xml``, linked as ``/opt/microsoft/ndv5/topo.xml``) and
name it in ``/etc/nccl.conf`` (Azure/azhpc-images ``customizations/ndv5.sh``, ``topology/*.xml``).
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.processes import ServerProcess
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

VARIABLE = "NCCL_TOPO_FILE"
NO_SERVER = "no server seen"
ND_SIZES: tuple[tuple[str, str, str], ...] = (
    (r"V100-SXM2", "ND40rs_v2", "ndv2"),
    (r"A100[- ]SXM4", "ND A100 v4", "ndv4"),
    (r"H100 80GB HBM3|H100 SXM|H200(?! NVL)", "ND H100 v5 / ND H200 v5", "ndv5"),
)
"""The ND sizes Azure ships an NCCL topology file for, by their GPU's NVML name: (pattern, sizes, file stem)."""


def nd_size(gpus: tuple[Gpu, ...]) -> tuple[str, str] | None:
    """(the ND sizes, the topology file's stem) whose GPUs these are; None when no ND size has them."""
    for pattern, sizes, stem in ND_SIZES:
        if gpus and all(re.search(pattern, g.name) for g in gpus):
            return sizes, stem
    return None


def shipped_paths(stem: str) -> tuple[str, str]:
    """Where Azure's HPC images put the size's topology file, and the link ``/etc/nccl.conf`` names."""
    return f"/opt/microsoft/{stem}-topo.xml", f"/opt/microsoft/{stem}/topo.xml"


class TopoChoice(Record):
    """The topology file one server's NCCL loads."""

    server: str
    """The server's label, or :data:`NO_SERVER` (the host's config files alone)."""
    source: str | None
    """Where ``NCCL_TOPO_FILE`` came from (``environment of pid 3120 (vllm)``, ``/etc/nccl.conf``); None: nowhere."""
    path: str | None
    exists: bool | None
    """Whether ``path`` is there in the server's filesystem (None: no path)."""
    environ_readable: bool
    in_container: bool
    from_environment: bool = False
    """``path`` is the environment's: it outranks the NCCL config files (NCCL applies them only to unset variables)."""


def _pick(env: dict[str, str] | None, confs: list[tuple[str, dict[str, str] | None]]) -> tuple[str | None, str | None]:
    if env and env.get(VARIABLE, "").strip():
        return "environment", env[VARIABLE].strip()
    for name, variables in confs:
        if variables and variables.get(VARIABLE, "").strip():
            return name, variables[VARIABLE].strip()
    return None, None


async def choose(
    probe: Probe,
    server: ServerProcess | None,
    env: tuple[str, dict[str, str] | None] | None,
    confs: list[tuple[str, dict[str, str] | None]],
    in_container: bool,
) -> TopoChoice:
    """``server``'s topology file from its environment (``env``: its source's name and variables) and its config
    files (``confs``, in NCCL's order)."""
    where, path = _pick(env[1] if env else None, confs)
    source = (env[0] if env else None) if where == "environment" else where
    root = server.root if server else ""
    exists = await probe.exists(f"{root}{path}") if path else None
    label = server.label if server else NO_SERVER
    readable = env is None or env[1] is not None
    return TopoChoice(label, source, path, exists, readable, in_container, where == "environment")


__all__ = ["ND_SIZES", "NO_SERVER", "VARIABLE", "TopoChoice", "choose", "nd_size", "shipped_paths"]
