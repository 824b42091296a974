"""Inference server processes: found through NVML's compute processes and a bounded /proc scan.

Reads only procfs files (``comm``, ``cmdline``, ``stat``, ``cgroup``, ``ns/mnt`` links): no command runs.
A process in another mount namespace (an LXC or Docker container seen from its host) is marked so,
and its files are reachable through ``/proc/PID/root``.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.container_signs import cgroup_container
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.server_argv import SERVER_MARKERS, argv_words, raylet, server_marker

_COMM_HINTS = ("python", "pt_main_thread", "ray::", *SERVER_MARKERS)
SCAN_LIMIT = 4096
"""At most this many /proc entries are looked at."""
_ANCESTOR_HOPS = 4


class ServerProcess(Record):
    pid: int
    argv: tuple[str, ...]
    marker: str
    """The server marker that matched (in its own command line or an ancestor's)."""
    container: str | None
    """``lxc 101`` / ``docker 0123456789ab`` from /proc/PID/cgroup, when it lives in one."""
    foreign_mnt_ns: bool | None
    """True when it runs in another mount namespace than the audit (its files: /proc/PID/root/...)."""
    gpu_memory: int | None = None
    """Bytes of GPU memory NVML says it holds (summed over GPUs), when NVML listed it."""

    @property
    def root(self) -> str:
        """Prefix for reading the process's own filesystem."""
        return f"/proc/{self.pid}/root" if self.foreign_mnt_ns is not False else ""

    @property
    def label(self) -> str:
        where = f" in {self.container}" if self.container else ""
        return f"pid {self.pid} ({self.marker}{where})"


class GpuProcess(Record):
    """A process NVML reports on a GPU."""

    pid: int
    gpu_index: int
    used_bytes: int | None
    argv: tuple[str, ...] | None
    """None when /proc/PID/cmdline could not be read (another PID namespace, gone, no permission)."""
    server: bool
    container: str | None = None
    """``docker 0123456789ab`` / ``lxc 101`` / ``kubepods ...`` from /proc/PID/cgroup, when it lives in one."""
    foreign_mnt_ns: bool | None = None
    """True when it runs in another mount namespace than the audit (a container seen from its host)."""
    marker: str | None = None
    """The server marker that matched (its own command line or an ancestor's), when ``server``."""
    cgroup: str | None = None
    """``/proc/PID/cgroup`` as read (None: not read)."""

    @property
    def contained(self) -> bool:
        """It runs in a container (its cgroup says so, or another mount namespace than the audit's)."""
        return bool(self.container) or bool(self.foreign_mnt_ns)


class ServerScan(Record):
    servers: tuple[ServerProcess, ...]
    gpu_processes: tuple[GpuProcess, ...]
    nvml_listed: bool
    """NVML answered nvmlDeviceGetComputeRunningProcesses for every GPU."""
    proc_scanned: int
    proc_error: str | None
    """Why /proc could not be listed, when it could not."""

    @property
    def searched(self) -> str:
        parts = ["NVML compute processes" + ("" if self.nvml_listed else " (not available)")]
        if self.proc_error is None:
            parts.append(f"{self.proc_scanned} /proc entries")
        else:
            parts.append(f"/proc ({self.proc_error})")
        return " and ".join(parts)


def split_cmdline(data: bytes | None) -> tuple[str, ...] | None:
    if data is None:
        return None
    return tuple(p.decode("utf-8", "replace") for p in argv_words(data))


def parse_environ(data: bytes | None) -> dict[str, str] | None:
    """``/proc/PID/environ`` (NUL-separated ``KEY=VALUE``) as a dict."""
    if data is None:
        return None
    env: dict[str, str] = {}
    for item in data.split(b"\x00"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and key:
            env[key] = value
    return env


def _ppid(stat: str | None) -> int | None:
    """Field 4 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses."""
    if not stat or ")" not in stat:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


async def _argv(probe: Probe, pid: int) -> tuple[str, ...] | None:
    return split_cmdline((await probe.read(f"/proc/{pid}/cmdline")).data)


async def _marker_with_ancestors(probe: Probe, pid: int) -> str | None:
    """The server marker of ``pid`` or of one of its few nearest ancestors (multiprocessing workers)."""
    current: int | None = pid
    for _ in range(_ANCESTOR_HOPS + 1):
        if current is None or current < 1:  # PID 1 counts: in a container it is the server itself
            return None
        marker = server_marker(await _argv(probe, current))
        if marker:
            return marker
        current = _ppid(await probe.text(f"/proc/{current}/stat"))
    return None


async def server_root(probe: Probe, pid: int) -> int | None:
    """The outermost of ``pid`` and its few nearest ancestors that carries a server marker: the server instance a
    worker belongs to (vLLM's engine core and its TP workers, a multiprocessing child of SGLang; for Ray actors, the
    node's raylet: its actors may be ranks of one server); None when none does."""
    root: int | None = None
    current: int | None = pid
    for _ in range(_ANCESTOR_HOPS + 1):
        if current is None or current < 1:
            break
        argv = await _argv(probe, current)
        if server_marker(argv) or (root is not None and raylet(argv)):
            root = current
        if current == 1:
            break
        current = _ppid(await probe.text(f"/proc/{current}/stat"))
    return root


async def _describe(probe: Probe, pid: int, marker: str, own_ns: str | None, gpu_memory: int | None) -> ServerProcess:
    argv = await _argv(probe, pid)
    cgroup = await probe.text(f"/proc/{pid}/cgroup")
    ns = await probe.readlink(f"/proc/{pid}/ns/mnt")
    return ServerProcess(pid, argv or (), marker, cgroup_container(cgroup), _foreign(ns, own_ns), gpu_memory)


def _nvml_processes(value: object) -> list[tuple[int, int | None]]:
    out: list[tuple[int, int | None]] = []
    if not isinstance(value, list):
        return out
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("pid"), int):
            used = item.get("usedGpuMemory")
            out.append((item["pid"], used if isinstance(used, int) else None))
    return out


async def _gpu_processes(probe: Probe, raw: list[tuple[int, int, int | None]], own_ns: str | None) -> list[GpuProcess]:
    """Each process NVML lists on a GPU: its command line, whether it is (a worker of) a server, its container."""
    markers = await probe.gather(*[lambda p=p: _marker_with_ancestors(probe, p) for p, _, _ in raw])
    argvs = await probe.gather(*[lambda p=p: _argv(probe, p) for p, _, _ in raw])
    cgroups = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/cgroup") for p, _, _ in raw])
    namespaces = await probe.gather(*[lambda p=p: probe.readlink(f"/proc/{p}/ns/mnt") for p, _, _ in raw])
    return [
        GpuProcess(pid, index, used, argv, marker is not None, cgroup_container(cgroup), _foreign(ns, own_ns), marker, cgroup)
        for (pid, index, used), marker, argv, cgroup, ns in zip(raw, markers, argvs, cgroups, namespaces, strict=True)
    ]


def _foreign(ns: str | None, own_ns: str | None) -> bool | None:
    return None if ns is None or own_ns is None else ns != own_ns


async def find_servers(probe: Probe) -> ServerScan:
    """Inference server processes and every process NVML lists on a GPU (memoized reads)."""
    inventory = await collect_gpus(probe)
    indices = inventory.nvml_indices
    listed = await probe.gather(*[lambda i=i: probe.nvml("nvmlDeviceGetComputeRunningProcesses", i) for i in indices])
    nvml_listed = bool(indices) and all(r.ok for r in listed)
    raw_gpu = [(pid, i, used) for i, r in zip(indices, listed, strict=True) if r.ok for pid, used in _nvml_processes(r.value)]
    own_ns = await probe.readlink("/proc/self/ns/mnt")
    gpu_processes = tuple(await _gpu_processes(probe, raw_gpu, own_ns))

    candidates: dict[int, str] = {p.pid: p.marker for p in gpu_processes if p.marker}
    listing = await probe.list_dir("/proc")
    pids = sorted(int(n) for n in (listing.entries or ()) if n.isdecimal())[:SCAN_LIMIT]
    comms = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/comm") for p in pids])
    hinted = [p for p, c in zip(pids, comms, strict=True) if c and any(h in c.lower() for h in _COMM_HINTS)]
    markers = await probe.gather(*[lambda p=p: _argv(probe, p) for p in hinted])
    for pid, argv in zip(hinted, markers, strict=True):
        marker = server_marker(argv)
        if marker and pid not in candidates:
            candidates[pid] = marker

    memory: dict[int, int] = {}
    for p in gpu_processes:
        if p.used_bytes is not None:
            memory[p.pid] = memory.get(p.pid, 0) + p.used_bytes
    servers = await probe.gather(
        *[lambda p=p, m=m: _describe(probe, p, m, own_ns, memory.get(p)) for p, m in sorted(candidates.items())]
    )
    return ServerScan(tuple(servers), gpu_processes, nvml_listed, len(pids), listing.error)
