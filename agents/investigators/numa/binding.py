"""Where each inference server may run and allocate: the GPUs it holds and the CPUs and memory nodes it is allowed.

A server's GPUs are the NVML compute processes that belong to it (its workers), else the GPUs its
``CUDA_VISIBLE_DEVICES`` names; its binding is ``Cpus_allowed_list`` (taskset, numactl --cpunodebind, a unit's
``CPUAffinity=``, a cpuset) and ``Mems_allowed_list`` (a cpuset: ``--cpuset-mems``, ``AllowedMemoryNodes=``) of
those processes in ``/proc/PID/status``. A ``numactl --membind`` policy is not in ``Mems_allowed_list``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.agents.facts.cpulist import parse_cpulist
from rigaudit.agents.facts.gpus import Gpu
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.facts.proc_info import parse_status
from rigaudit.agents.facts.processes import ServerScan, parse_environ, server_root
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

SERVER_LIMIT = 16
"""At most this many servers are read."""


class ServerBinding(Record):
    """One server: its GPUs and what its GPU-driving processes are allowed."""

    pid: int
    label: str
    gpus: tuple[int, ...]
    """NVML indices of the GPUs it holds."""
    gpus_from: str
    """``NVML`` or ``CUDA_VISIBLE_DEVICES``; empty when its GPUs are not known."""
    pids: tuple[int, ...]
    """The processes whose ``/proc/PID/status`` was read (the workers on the GPUs, else the server)."""
    cpus: tuple[int, ...] | None
    """The CPUs they may run on (the union of their ``Cpus_allowed_list``); None: not read."""
    mems: tuple[int, ...] | None
    """The memory nodes they may allocate on (``Mems_allowed_list``); None: not read."""
    container: str | None = None
    cgroup: str | None = None
    """Its ``/proc/PID/cgroup`` (a systemd unit's ``0::/system.slice/NAME.service``)."""

    @property
    def unit(self) -> str | None:
        """The systemd service it runs under, from its cgroup."""
        for line in (self.cgroup or "").splitlines():
            last = line.rsplit("/", 1)[-1].strip()
            if last.endswith(".service") and "/system.slice/" in line:
                return last
        return None


def _visible(env: dict[str, str] | None, gpus: Sequence[Gpu], in_container: bool) -> tuple[int, ...] | None:
    """The NVML indices ``CUDA_VISIBLE_DEVICES`` names (an index or a ``GPU-`` UUID each); every GPU in a container
    that sets none; None when it does not tell."""
    value = (env or {}).get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return tuple(g.index for g in gpus if g.index is not None) if in_container and env is not None else None
    out: list[int] = []
    for item in (v.strip() for v in value.split(",")):
        match = next((g for g in gpus if g.uuid and item and g.uuid.startswith(item)), None) if item.startswith("GPU-") else None
        index = match.index if match is not None else count(item)
        if index is None:
            return None
        out.append(index)
    return tuple(out)


def _allowed(status: str | None, key: str) -> tuple[int, ...] | None:
    value = parse_status(status).get(key)
    parsed = parse_cpulist(value) if value else None
    return tuple(parsed) if parsed else None


def _union(values: Sequence[tuple[int, ...] | None]) -> tuple[int, ...] | None:
    if not values or any(v is None for v in values):
        return None
    return tuple(sorted({x for v in values if v is not None for x in v}))


async def collect_bindings(probe: Probe, scan: ServerScan, gpus: Sequence[Gpu], in_container: bool) -> tuple[ServerBinding, ...]:
    """Each server's GPUs and binding (:class:`ServerBinding`), at most :data:`SERVER_LIMIT` of them."""
    workers = [p for p in scan.gpu_processes if p.server]
    roots = await probe.gather(*[lambda p=p: server_root(probe, p.pid) for p in workers])
    held: dict[int, dict[int, set[int]]] = {}
    for proc, root in zip(workers, roots, strict=True):
        held.setdefault(root if root is not None else proc.pid, {}).setdefault(proc.pid, set()).add(proc.gpu_index)
    worker_pids = {p.pid for p in workers}
    by_pid = {s.pid: s for s in scan.servers}
    others = [s.pid for s in scan.servers if s.pid not in held and s.pid not in worker_pids]
    environs = await probe.gather(*[lambda p=p: probe.read(f"/proc/{p}/environ") for p in others])
    for pid, environ in zip(others, environs, strict=True):
        if scan.nvml_listed and not in_container:
            continue  # NVML lists every GPU's processes and none of this server's: it holds no GPU
        visible = _visible(parse_environ(environ.data), gpus, in_container)
        held[pid] = {pid: set(visible)} if visible else {}
    out: list[ServerBinding] = []
    for root in sorted(held)[:SERVER_LIMIT]:
        procs = held[root]
        pids = tuple(sorted(procs)) or (root,)
        statuses = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/status") for p in pids])
        server = by_pid.get(root)
        label = server.label if server is not None else f"pid {root}"
        indices = tuple(sorted({i for s in procs.values() for i in s}))
        from_nvml = root not in others
        out.append(
            ServerBinding(
                pid=root,
                label=label,
                gpus=indices,
                gpus_from=("NVML" if from_nvml else "CUDA_VISIBLE_DEVICES") if indices else "",
                pids=pids,
                cpus=_union([_allowed(t, "Cpus_allowed_list") for t in statuses]),
                mems=_union([_allowed(t, "Mems_allowed_list") for t in statuses]),
                container=server.container if server is not None else None,
                cgroup=await probe.text(f"/proc/{root}/cgroup"),
            )
        )
    return tuple(out)
