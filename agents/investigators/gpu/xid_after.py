"""What happened to a GPU after an Xid: the recovery action now, later Xid 154 lines, the row remap, the process.

The kernel log holds every message since boot, so an Xid stays in it after the GPU has been dealt with. An Xid is
*settled* when what followed it shows that its resolution has happened:

- the GPU's recovery action is None now (NVML's ``NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`` field where it was read,
  else the GPU's last Xid 154 line) after an Xid 154 that followed the Xid, and no memory event is pending on the GPU
  (NVIDIA: None means "no recovery action is needed; the GPU can be immediately used again by starting a new GPU
  process", docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html);
- an application fault (NVIDIA's resolution: restart the application) whose ``pid=`` has exited, in a kernel log
  whose pids this audit's /proc can see: the process that hit it is gone, so the restart has happened.
"""

from __future__ import annotations

import re
from typing import Literal

from rigaudit.agents.facts.gpus import normalize_bdf
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.facts.processes import server_root, split_cmdline
from rigaudit.agents.facts.xid_catalog import lookup
from rigaudit.agents.investigators.gpu.memory import MEMORY_XIDS
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.server_argv import server_marker

RECOVERY_FIELD = 230
"""``NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`` (nvml.h): the GPU's current ``nvmlDeviceGpuRecoveryAction_t``, an
unsigned int (an H100 on driver 580.159.04 answered in 13 us: ``valueType`` 1, ``uiVal`` 0, as nvidia-smi -q's
"GPU Recovery Action: None")."""
RECOVERY_SCOPE = 0
PID_LIMIT = 32
"""At most this many distinct ``pid=`` of Xid lines are looked up in /proc."""
USER_HZ = 100
"""The clock ticks a second of /proc's times (``sysconf(_SC_CLK_TCK)``: 100 on every Linux architecture)."""
_PID = r"\bpid=(\d{1,9})\b"
_NAME = r"\bname=([^,\s]{1,64})"
_AT = r"^\s*\[\s*(\d{1,10}\.\d{1,9})\]"
_XID_LINE = r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d{1,5})\b"


class XidEvent(Record):
    bdf: str
    xid: int
    line: str
    order: int = 0
    """Its line's place in the kernel log (later lines, larger)."""

    @property
    def at(self) -> float | None:
        return line_time(self.line)

    @property
    def when(self) -> str:
        """``at 71234.5 s`` (seconds since boot), or ``line N`` where the log carries no such time."""
        at = self.at
        return f"at {at:g} s" if at is not None else f"line {self.order + 1}"


def parse_xids(text: str) -> list[XidEvent]:
    events = []
    for order, line in enumerate(text.splitlines()):
        if match := re.search(_XID_LINE, line):
            bdf = match.group(1)
            if "." not in bdf:
                bdf += ".0"
            events.append(XidEvent(normalize_bdf(bdf), int(match.group(2)), line.strip(), order))
    return events


class XidProcess(Record):
    """The process an Xid line names, as /proc shows it now."""

    pid: int
    state: Literal["exited", "running", "unknown"]
    comm: str | None = None
    server: str | None = None
    """``pid 4242 (vllm)``: the serving process it is (or is a worker of), when it is one."""
    why: str = ""
    """Why its state is unknown."""
    started: float | None = None
    """When the process with that pid started, in seconds since boot (/proc/PID/stat's starttime; None: not read)."""


def line_pid(line: str) -> int | None:
    match = re.search(_PID, line)
    return int(match.group(1)) if match else None


def line_name(line: str) -> str | None:
    match = re.search(_NAME, line)
    name = match.group(1) if match else None
    return None if name is None or name.startswith("<") else name


def line_time(line: str) -> float | None:
    """The ``[ 71234.500000]`` seconds since boot a dmesg line starts with (None: another time format)."""
    match = re.search(_AT, line)
    return float(match.group(1)) if match else None


def app_fault(code: int) -> bool:
    """An Xid whose resolution in NVIDIA's catalog is to restart the application that hit it (13, 31, 43...)."""
    entry = lookup(code)
    return entry is not None and entry.resolution == "restart_app" and code not in MEMORY_XIDS


async def _process(probe: Probe, pid: int, names: frozenset[str]) -> XidProcess:
    if str(pid) not in names:
        return XidProcess(pid, "exited")
    comm = await probe.text(f"/proc/{pid}/comm")
    if comm is None:
        return XidProcess(pid, "unknown", why=f"/proc/{pid} is listed but its comm was not read")
    root = await server_root(probe, pid)
    server = None
    if root is not None:
        marker = server_marker(split_cmdline((await probe.read(f"/proc/{root}/cmdline")).data))
        server = f"pid {root} ({marker})"
    return XidProcess(pid, "running", comm.strip(), server, started=start_time(await probe.text(f"/proc/{pid}/stat")))


def start_time(stat: str | None) -> float | None:
    """Seconds since boot a process started: /proc/PID/stat's field 22 (starttime, in USER_HZ ticks: 100 a second
    on Linux), counted after the ``(comm)`` that may hold spaces (None: not read or not that shape)."""
    fields = stat.rpartition(")")[2].split() if stat else []
    ticks = count(fields[19]) if len(fields) > 19 else None
    return ticks / USER_HZ if ticks is not None else None


async def collect_xid_processes(probe: Probe, log: str, *, in_container: bool) -> dict[int, XidProcess]:
    """Each ``pid=`` an application-fault Xid line names, as this audit's /proc shows it (bounded)."""
    pids: dict[int, None] = {}
    for event in parse_xids(log):
        if app_fault(event.xid) and (pid := line_pid(event.line)) is not None and pid > 0:
            pids[pid] = None
    wanted = list(pids)[:PID_LIMIT]
    if not wanted:
        return {}
    if in_container:
        why = "the kernel log names the host's pids; this container's /proc shows its own"
        return {p: XidProcess(p, "unknown", why=why) for p in wanted}
    listing = await probe.list_dir("/proc")
    if listing.entries is None:
        why = f"/proc could not be listed ({listing.error})"
        return {p: XidProcess(p, "unknown", why=why) for p in wanted}
    names = frozenset(listing.entries)
    if not any(n.isdecimal() for n in names):  # a snapshot that never listed /proc (a live one always holds pid 1)
        why = "no process list of /proc was recorded"
        return {p: XidProcess(p, "unknown", why=why) for p in wanted}
    found = await probe.gather(*[lambda p=p: _process(probe, p, names) for p in wanted])
    return {p.pid: p for p in found}


def recovery_now(value: object) -> int | None:
    """The recovery action in an ``nvmlDeviceGetFieldValues(GPU, 230, 0)`` answer (None: not read or failed)."""
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or item.get("fieldId") not in (RECOVERY_FIELD, None):
            continue
        if item.get("nvmlReturn") not in (0, None):
            return None
        held = item.get("value")
        raw = held.get("uiVal") if isinstance(held, dict) else held
        if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < 2**32:
            return raw
    return None
