"""NVLSM's own state: the NVLink Subnet Manager that programs the NVSwitches of an NVLink 5 system (HGX/DGX B200 on).

nvidia-fabricmanager-start.sh starts NVLSM inside the fabric manager's unit before nv-fabricmanager, which finds
nothing to do (NV_WARN_NOTHING_TO_DO) without it (NVIDIA Fabric Manager user guide, release 2.3). So the fabric
manager's log tells only that NVLSM is missing; why is in NVLSM's own state: whether it is installed
(``/opt/nvidia/nvlsm/sbin/nvlsm``), whether its process runs (the pid file it is started with, ``/proc/PID/comm``),
and its own log (``/var/log/nvlsm.log``, its configuration's log_file; github.com/siderolabs/extensions/issues/893
shows the command line and the option). Read only when the fabric manager is down on Blackwell GPUs; the log to its
last lines.
"""

from __future__ import annotations

from rigaudit.agents.facts.unit_reasons import NVLSM as REASONS
from rigaudit.agents.facts.unit_reasons import Cause, log_cause
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

BINARY = "/opt/nvidia/nvlsm/sbin/nvlsm"
PID_FILE = "/var/run/nvlsm.pid"
LOG = "/var/log/nvlsm.log"
TELL = f"tail -n 50 {LOG}; cat {PID_FILE}; ps -C nvlsm -o pid,args"


class Nvlsm(Record):
    installed: bool
    running: bool | None
    """None when its pid file or process could not be read."""
    pid: int | None
    log: str | None
    log_error: str | None

    @property
    def refs(self) -> tuple[str, ...]:
        proc = (file_ref(f"/proc/{self.pid}/comm"),) if self.pid else ()
        log = (file_ref(LOG),) if self.installed else ()
        return (f"exists:{BINARY}", file_ref(PID_FILE), *proc, *log)

    def cause(self) -> Cause:
        """Why NVLSM is not running, in its own log's words; ``unknown`` (naming what would tell) where unread."""
        unread = f"{LOG}: {self.log_error or 'empty'}"
        return log_cause(REASONS, file_ref(LOG), self.log, TELL, unread)

    def text(self) -> str:
        state = {True: f"running (pid {self.pid})", False: "not running", None: "state unreadable"}[self.running]
        return f"NVLSM {'installed' if self.installed else 'not installed'}, {state}"


async def collect_nvlsm(probe: Probe) -> Nvlsm:
    installed = await probe.exists(BINARY)
    pid_file = await probe.read(PID_FILE)
    text = (pid_file.text() or "").strip()
    pid = int(text) if text.isdecimal() else None
    running: bool | None
    if pid is not None:
        comm = await probe.read(f"/proc/{pid}/comm")
        running = (comm.text() or "").strip() == "nvlsm" if comm.ok or comm.error == "ENOENT" else None
    else:
        running = False if pid_file.error == "ENOENT" or pid_file.ok else None
    log = await probe.read(LOG) if installed else None
    return Nvlsm(
        installed=installed,
        running=running,
        pid=pid,
        log=log.text() if log else None,
        log_error=log.error if log else "not installed",
    )
