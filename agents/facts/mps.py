"""NVIDIA MPS as the host runs it: the control daemon, its MPS servers, and the processes NVML lists as MPS clients.

Reads ``/proc/PID/cmdline`` of the processes whose ``comm`` is ``nvidia-cuda-mps`` (both programs' names are cut to
that) and ``nvmlDeviceGetMPSComputeRunningProcesses`` per GPU (nvidia-smi's ``M+C`` rows). Judged against
:data:`~rigaudit.agents.facts.deliberate.MPS_SHARING`.
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.proc_info import status_uid
from rigaudit.agents.facts.processes import parse_environ, split_cmdline
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

MPS_COMM = "nvidia-cuda-mps"
SERVER_PROGRAM = "nvidia-cuda-mps-server"
CONTROL_PROGRAM = "nvidia-cuda-mps-control"
MPS_CLIENTS_FN = "nvmlDeviceGetMPSComputeRunningProcesses"
LOG_DIR = "/var/log/nvidia-mps"
LOG_LINES = 400
"""The control log's last lines read: its connections of the current servers' lifetime."""
_PENDING = r"NEW CLIENT (\d+) from user (\d+): Server is not ready, push client to pending list"
_STARTED = r"Starting new server (\d+) for user (\d+)"


class Queued(Record):
    """A client the control daemon put on its pending list that no server of its user has taken since."""

    pid: int
    """Its pid as the daemon saw it (0 when the client is in another PID namespace)."""
    uid: int
    line: str


class MpsState(Record):
    """What runs of MPS on this host."""

    controls: tuple[int, ...]
    """nvidia-cuda-mps-control pids."""
    servers: tuple[int, ...]
    """nvidia-cuda-mps-server pids: each holds the GPUs for its clients."""
    clients: tuple[int, ...] | None
    """Pids NVML lists as MPS clients on any GPU (None: NVML did not answer for every GPU)."""
    server_uids: tuple[int, ...] = ()
    """The users the running MPS servers run as (/proc/PID/status)."""
    queued: tuple[Queued, ...] = ()
    """Clients of another user than every running server's, waiting on the control log's pending list."""
    log: str | None = None
    """The control log's path, where it was read (None: not read)."""

    @property
    def running(self) -> bool:
        return bool(self.controls or self.servers)

    def client(self, pid: int) -> bool:
        return self.clients is not None and pid in self.clients

    @property
    def sharing(self) -> bool:
        """An MPS server holds the GPUs for clients NVML lists: MPS in use."""
        return bool(self.servers) and bool(self.clients)


def _program(argv: tuple[str, ...] | None) -> str:
    return argv[0].rsplit("/", 1)[-1] if argv else ""


async def collect_mps(probe: Probe, inventory: GpuInventory, mps_pids: tuple[int, ...]) -> MpsState:
    """The MPS processes among ``mps_pids`` (comm ``nvidia-cuda-mps*``) and NVML's MPS clients."""
    cmdlines = await probe.gather(*[lambda p=p: probe.read(f"/proc/{p}/cmdline") for p in mps_pids])
    programs = {p: _program(split_cmdline(r.data)) for p, r in zip(mps_pids, cmdlines, strict=True)}
    indices = inventory.nvml_indices if inventory.nvml_ok else []
    listed = await probe.gather(*[lambda i=i: probe.nvml(MPS_CLIENTS_FN, i) for i in indices])
    clients: tuple[int, ...] | None = None
    if indices and all(r.ok for r in listed):
        pids = {item["pid"] for r in listed if isinstance(r.value, list) for item in r.value if _pid_row(item)}
        clients = tuple(sorted(pids))
    controls = tuple(p for p, name in programs.items() if name == CONTROL_PROGRAM)
    servers = tuple(p for p, name in programs.items() if name == SERVER_PROGRAM)
    statuses = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/status") for p in servers])
    uids = tuple(sorted({u for t in statuses if (u := status_uid(t)) is not None}))
    log, queued = await _queued(probe, controls, uids) if controls and uids else (None, ())
    return MpsState(controls=controls, servers=servers, clients=clients, server_uids=uids, queued=queued, log=log)


async def _queued(probe: Probe, controls: tuple[int, ...], uids: tuple[int, ...]) -> tuple[str | None, tuple[Queued, ...]]:
    """The control log (in the daemon's CUDA_MPS_LOG_DIRECTORY) and the clients on its pending list that are of
    another user than the running servers': the MPS guide's one server per user, whose clients of another user wait
    until every client of the running server has exited."""
    env = parse_environ((await probe.read(f"/proc/{controls[0]}/environ")).data) or {}
    path = f"{env.get('CUDA_MPS_LOG_DIRECTORY', LOG_DIR).rstrip('/')}/control.log"
    text = (await probe.read(path)).text()
    if text is None:
        return None, ()
    pending: dict[tuple[int, int], str] = {}
    for line in text.splitlines()[-LOG_LINES:]:
        if (m := re.search(_PENDING, line)) is not None:
            pending[(int(m.group(1)), int(m.group(2)))] = line.strip()
        elif (m := re.search(_STARTED, line)) is not None:
            pending = {k: v for k, v in pending.items() if k[1] != int(m.group(2))}
    waiting = [(pid, uid, line) for (pid, uid), line in pending.items() if uid not in uids]
    alive = await probe.gather(*[lambda p=p: probe.exists(f"/proc/{p}") for p, _, _ in waiting])
    return path, tuple(Queued(pid, uid, line) for (pid, uid, line), up in zip(waiting, alive, strict=True) if up or not pid)


def log_ref(state: MpsState) -> tuple[str, ...]:
    return (file_ref(state.log),) if state.log else ()


def _pid_row(item: object) -> bool:
    return isinstance(item, dict) and isinstance(item.get("pid"), int)


THREAD_PERCENTAGE = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"


def _percentage(env: dict[str, str]) -> float:
    """A client's share of a GPU's SMs: its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (all of them when unset or unreadable)."""
    try:
        value = float(env.get(THREAD_PERCENTAGE, "100").strip() or "100")
    except ValueError:
        return 100.0
    return value if 0 < value <= 100 else 100.0


def idle_shares(clients_by_gpu: dict[int, list[int]], env: dict[int, dict[str, str]]) -> dict[int, float]:
    """GPU index -> the SM share its MPS clients may use together, for the GPUs where that is below 100 %: the rest of
    the GPU's SMs serve no one (the MPS guide provisions n clients at 100/n % each, or more so that they overlap)."""
    shares = {gpu: sum(_percentage(env.get(pid, {})) for pid in pids) for gpu, pids in clients_by_gpu.items() if pids}
    return {gpu: share for gpu, share in sorted(shares.items()) if share < 100}
