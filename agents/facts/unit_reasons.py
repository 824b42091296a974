"""Why a driver service or kernel module failed, in its own words: its log, its unit's journal, the kernel log.

A rule that finds a daemon down or a module not loaded chooses its fix from the reason the component gave, never
"start it again" when its log says it will fail again. Each known message is one row of a table: the words the
component prints (as NVIDIA's components print them, sourced per row), the cause they mean, the fix that removes
the cause and whether a plain start or load would fail again. Where nothing readable names a reason, the cause is
``unknown`` and the finding says which command would tell.

Reads are bounded: ``journalctl -u UNIT -n 50 --no-pager``, ``systemctl status UNIT --no-pager`` and the last lines
of the daemon's own log file, all only for a unit that is not active (NVLSM's log, agents.facts.nvlsm, likewise).
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref
from rigaudit.tools.schema.finding import FixKind

JOURNAL_LINES = 50
LOG_LINES = 400
"""The daemon's own log is read to its last LOG_LINES lines: the start that failed is at its end."""


class Reason(Record):
    """One known message: what it means and what removes its cause."""

    key: str
    pattern: str
    """A regular expression searched in each line (case-sensitive: the component's exact words)."""
    cause: str
    fix: str
    kind: FixKind
    again: bool
    """True when starting the daemon (or loading the module) again fails until the cause is removed."""
    source: str
    module: str | None = None
    """For a kernel-log row scoped to one module's lines (``nvidia_peermem: Unknown symbol ...``): that module's name,
    ``{module}`` in ``pattern`` standing for it; None for NVRM's own lines (nvidia.ko)."""


class Cause(Record):
    """The reason read for one failure (``key == "unknown"`` when none was readable)."""

    key: str
    cause: str
    fix: str
    kind: FixKind | None
    again: bool
    line: str | None
    """The line that told, as the component printed it."""
    told_by: str | None
    """The evidence ref it was read from."""
    source: str | None
    tell: str
    """The commands that show the reason (for a person, and for an unknown cause)."""

    @property
    def known(self) -> bool:
        return self.key != "unknown"


class UnitLog(Record):
    """A systemd unit's own account of its last start."""

    unit: str
    status: CommandResult
    journal: CommandResult
    log_path: str | None = None
    log: str | None = None
    log_error: str | None = None

    @property
    def refs(self) -> tuple[str, ...]:
        own = (file_ref(self.log_path),) if self.log_path else ()
        return (command_ref(self.journal.argv), command_ref(self.status.argv), *own)

    @property
    def tell(self) -> str:
        own = f"; tail -n 50 {self.log_path}" if self.log_path else ""
        return f"journalctl -u {self.unit} -n {JOURNAL_LINES} --no-pager; systemctl status {self.unit} --no-pager{own}"

    def texts(self) -> list[tuple[str, str]]:
        """(ref, text) of every readable source, the daemon's own log first."""
        out = []
        if self.log_path and self.log:
            out.append((file_ref(self.log_path), "\n".join(self.log.splitlines()[-LOG_LINES:])))
        for result in (self.journal, self.status):
            if result.error is None and result.stdout:
                out.append((command_ref(result.argv), result.stdout))
        return out

    @property
    def masked(self) -> bool:
        return self.status.error is None and bool(re.search(r"(?m)^\s*Loaded: masked\b", self.status.stdout))

    @property
    def unread(self) -> str | None:
        """Why nothing of the unit's account could be read, or None when something was."""
        if self.texts():
            return None
        parts = [
            f"{' '.join(r.argv[:2])}: {r.error or f'exit status {r.exit_code}, no output'}" for r in (self.journal, self.status)
        ]
        if self.log_path:
            parts.append(f"{self.log_path}: {self.log_error or 'empty'}")
        return "; ".join(parts)


async def read_unit(probe: Probe, unit: str, log_path: str | None = None) -> UnitLog:
    journal = await probe.run(("journalctl", "-u", unit, "-n", str(JOURNAL_LINES), "--no-pager"))
    status = await probe.run(("systemctl", "status", unit, "--no-pager"))
    if log_path is None:
        return UnitLog(unit=unit, status=status, journal=journal)
    log = await probe.read(log_path)
    return UnitLog(unit=unit, status=status, journal=journal, log_path=log_path, log=log.text(), log_error=log.error)


MASKED = Reason(
    key="masked",
    pattern=r"^\s*Loaded: masked\b",
    cause="the unit is masked (linked to /dev/null): systemd refuses to start it",
    fix="systemctl unmask the unit, then enable and start it",
    kind="runtime",
    again=True,
    source="systemctl(1), 'mask': https://www.freedesktop.org/software/systemd/man/latest/systemctl.html",
)

FABRICMANAGER: tuple[Reason, ...] = (
    Reason(
        key="fm_version",
        pattern=r"fabric manager NVIDIA GPU driver interface version (\S+) (?:don't|doesn't|don’t) match with driver "
        r"version (\S+?)\.?(?:\s|$)",
        cause="the fabric manager's version is not the loaded driver's: it checks the driver stack's version at start "
        "and aborts on a mismatch",
        fix="install the fabric manager package of exactly the loaded driver's version (or the driver of the fabric "
        "manager's), hold both, then restart it",
        kind="restart",
        again=True,
        # Fabric Manager user guide, 'Fabric Manager Startup': FM "checks the currently loaded kernel driver stack
        # version for compatibility, and if the loaded driver stack version is not compatible, aborts the process";
        # the message as printed: github.com/NVIDIA/gpu-operator/issues/544, github.com/siderolabs/pkgs/issues/720.
        source="https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",
    ),
    Reason(
        key="ib_umad",
        pattern=r"umad_init: can't read ABI version from /sys/class/infiniband_mad/abi_version.*is ib_umad module loaded",
        cause="NVLSM cannot open the NVSwitch management port: the ib_umad module is not loaded, so the NVLink 5 "
        "switches are never programmed",
        fix="load ib_umad now and at boot (echo ib_umad > /etc/modules-load.d/ib_umad.conf), then restart "
        "nvidia-fabricmanager (its start script starts NVLSM first)",
        kind="runtime",
        again=True,
        # The message NVLSM (OpenSM's libibumad) prints: github.com/siderolabs/docs/pull/581 (HGX B200); the fix,
        # github.com/spectrocloud/CanvOS/pull/700 ("autoload ib_umad so fabricmanager precheck passes on NVL5+").
        source="https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html#what-is-nvlink-subnet-manager",
    ),
    Reason(
        key="nvswitch_nothing",
        pattern=r"request to query NVSwitch device information from NVSwitch driver failed with error:\s*WARNING "
        r"Nothing to do \[NV_WARN_NOTHING_TO_DO\]",
        cause="the NVSwitch driver reports no NVSwitch to manage",
        fix="see the NVSwitch generation: on NVLink 5 systems start NVLSM with it; elsewhere the switches are not seen",
        kind="runtime",
        again=True,
        # Fabric Manager user guide (release 2.3, 'Systems Using Fourth Generation NVSwitches'): not running NVLSM on
        # NVLink 5.0+ fabrics makes FM fail with NV_WARN_NOTHING_TO_DO; the line as printed:
        # github.com/NVIDIA/gpu-operator/issues/610 (a host without NVSwitches).
        source="https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",
    ),
)
"""What nv-fabricmanager (and its start script's NVLSM) prints when it cannot start."""

NVLSM: tuple[Reason, ...] = (
    Reason(
        key="nvlsm_guid",
        pattern=r"ERR 5422: Unable to find requested CA guid (0x[0-9a-fA-F]+)",
        cause="NVLSM was given a port GUID that no local device owns (pinned by hand or copied from another host), so "
        "it cannot bind the NVSwitch management port and exits",
        fix="remove the GUID pinned for NVLSM (a drop-in of nvidia-fabricmanager or a guid line in "
        "/usr/share/nvidia/nvlsm/nvlsm.conf) so the start script hands it this host's management port GUID (ibstat: "
        "the port of the device whose VPD says SMDL=SW_MNG)",
        kind="runtime",
        again=True,
        # OpenSM's vendor layer (NVLSM is OpenSM-derived: its log opens "OpenSM 2025.06..."): linux-rdma/opensm,
        # libvendor/osm_vendor_ibumad.c, osm_vendor_open_port "ERR 5422: Unable to find requested CA guid".
        source="https://github.com/linux-rdma/opensm/blob/master/libvendor/osm_vendor_ibumad.c",
    ),
    *(r for r in FABRICMANAGER if r.key == "ib_umad"),
)
"""What NVLSM prints in its own log (``/var/log/nvlsm.log``, its configuration's log_file) when it cannot start."""

PERSISTENCED: tuple[Reason, ...] = (
    Reason(
        key="pd_devices",
        pattern=r"Failed to query NVIDIA devices\. Please ensure that the NVIDIA device files \(/dev/nvidia\*\) exist, "
        r"and that user (\S+) has read and write permissions for those files",
        cause="the daemon cannot open the GPUs' device files (/dev/nvidia*): missing, or not readable and writable by "
        "the user it runs as",
        fix="create the device nodes (nvidia-modprobe -c 0 for each GPU) or give the daemon's user (its --user "
        "option) read and write access to /dev/nvidia*, then restart nvidia-persistenced",
        kind="runtime",
        again=True,
        # nvidia-persistenced's source (github.com/NVIDIA/nvidia-persistenced, nvpd.c) prints it, then
        # "nvidia-persistenced failed to initialize. Check syslog for more details."
        source="https://github.com/NVIDIA/nvidia-persistenced",
    ),
)
"""What nvidia-persistenced prints when it cannot start."""

IMEX: tuple[Reason, ...] = (
    Reason(
        key="imex_no_interface",
        pattern=r"No matching network interface found for any IP addresses in the node configuration file",
        cause="none of the addresses in IMEX's nodes config is one of this node's: the daemon cannot tell which node "
        "of the domain it is (its bind address is taken from that list when BIND_INTERFACE_IP is empty)",
        fix="make the nodes config list every node of this NVLink domain, this node's own address (of the interface "
        "that reaches the other nodes) among them, the same file on every node, then restart nvidia-imex",
        kind="runtime",
        again=True,
        # The daemon's line as printed: github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/289; the bind address
        # taken from IMEX_NODE_CONFIG_FILE: IMEX guide, 'IMEX Service Config Options' (BIND_INTERFACE_IP).
        source="https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html",
    ),
)
"""What nvidia-imex prints when it cannot start."""

KERNEL: tuple[Reason, ...] = (
    Reason(
        key="open_required",
        pattern=r"NVRM: .*requires use of the NVIDIA open kernel modules",
        cause="the proprietary kernel module refuses these GPUs: only the open GPU kernel modules drive them",
        fix="install the open kernel module flavor of the same driver and reboot",
        kind="reboot",
        again=True,
        # NVIDIA driver README, 'NVIDIA Open GPU Kernel Modules': Blackwell and newer are supported by the open
        # modules only.
        source="https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/kernel_open.html",
    ),
    Reason(
        key="gpu_unsupported",
        pattern=r"NVRM: .*(?:installed in this system is not supported by the|is not supported by the NVIDIA)",
        cause="the GPU is not supported by this driver release (too old or too new a branch for it)",
        fix="install a driver branch that lists this GPU (README 'Appendix A - Supported NVIDIA GPU Products') and reboot",
        kind="reboot",
        again=True,
        source="https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/supportedchips.html",
    ),
    Reason(
        key="probe_not_called",
        pattern=r"NVRM: The NVIDIA probe routine was not called for \d+ device",
        cause="another driver (nouveau, vfio-pci, a framebuffer driver) owns the GPUs, so nvidia.ko never probed them",
        fix="blacklist nouveau (or release the GPUs from vfio-pci), rebuild the initramfs and reboot",
        kind="reboot",
        again=True,
        # The driver's own words (kernel-open/nvidia/nv.c): "This can occur when a driver such as: nouveau, rivafb,
        # nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s)."
        source="https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv.c",
    ),
    Reason(
        key="api_mismatch",
        pattern=r"NVRM: API mismatch: the client has the version (\S+), but",
        cause="the user-space driver and the loaded kernel module are different versions (an upgrade without its "
        "reboot, or two installs)",
        fix="reboot into the installed driver (or reinstall one version of both); see driver.library_mismatch",
        kind="reboot",
        again=True,
        source="https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv.c",
    ),
    Reason(
        key="rm_init",
        pattern=r"NVRM: (?:GPU \S+: )?RmInitAdapter failed",
        cause="the driver could not initialize the GPU (firmware, power or hardware, or a GSP failure)",
        fix="collect nvidia-bug-report.sh, power-cycle the machine; if it repeats, check the GPU's power and seating "
        "and report it with the bug report",
        kind="hardware",
        again=True,
        source="https://docs.nvidia.com/deploy/xid-errors/index.html",
    ),
    Reason(
        key="signature",
        pattern=r"Loading of (?:unsigned module|module with unavailable key|module with unsupported crypto) is rejected"
        r"|Key was rejected by service|Lockdown: .*unsigned module",
        # kernel/module/signing.c: pr_notice("Loading of %s is rejected\n", reason), reason "unsigned module",
        # "module with unavailable key" (signed by a key not enrolled) or "module with unsupported crypto".
        cause="Secure Boot's lockdown rejects the module: unsigned, or signed by a key that is not enrolled",
        fix="sign the modules with an enrolled Machine Owner Key (see driver.secure_boot) or turn Secure Boot off",
        kind="reboot",
        again=True,
        source="https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/installdriver.html",
    ),
    Reason(
        key="peer_memory_api",
        pattern=r"{module}: (?:Unknown symbol|disagrees about version of symbol) ib_(?:un)?register_peer_memory_client",
        cause="the loaded ib_core has no peer-memory API (the inbox RDMA stack, or nvidia_peermem built before "
        "MLNX_OFED/DOCA-OFED was installed)",
        fix="install MLNX_OFED/DOCA-OFED and rebuild the NVIDIA modules after it (dkms autoinstall), or use DMA-BUF "
        "(the open kernel module on Linux 5.12+, NCCL 2.19+) and leave nvidia_peermem out",
        kind="reboot",
        again=True,
        # NVIDIA GPUDirect RDMA guide: nvidia-peermem needs MLNX_OFED's peer-memory API; kernel's own message form
        # "%s: Unknown symbol %s (err %d)" (kernel/module/main.c).
        source="https://docs.nvidia.com/cuda/gpudirect-rdma/index.html",
        module="nvidia_peermem",
    ),
    Reason(
        key="symbols",
        pattern=r"{module}: (?:Unknown symbol|disagrees about version of symbol) (\S+)",
        cause="the module was built against another kernel or another nvidia.ko than the one loaded",
        fix="rebuild every NVIDIA module for the running kernel from one driver version (dkms autoinstall, or "
        "reinstall the driver) and reboot",
        kind="reboot",
        again=True,
        source="https://www.kernel.org/doc/html/latest/kbuild/modules.html",
        module="*",
    ),
)
"""What the kernel prints when an NVIDIA module does not load. ``module verification failed: signature and/or required
key missing - tainting kernel`` is not among them: the kernel prints it and loads the module anyway (a taint)."""

_MODULE_SPELLINGS = {"nvidia_uvm": ("nvidia_uvm", "nvidia-uvm"), "nvidia_peermem": ("nvidia_peermem", "nvidia-peermem")}


def _search(
    reasons: tuple[Reason, ...], sources: list[tuple[str, str]], module: str | None = None
) -> tuple[Reason, str, str] | None:
    """The reason of the newest matching line: (reason, line, ref)."""
    found: tuple[Reason, str, str] | None = None
    names = _MODULE_SPELLINGS.get(module or "", (module,) if module else ())
    for ref, text in sources:
        for line in text.splitlines():
            for reason in reasons:
                if reason.module is None:
                    hit = re.search(reason.pattern, line)
                elif reason.module not in ("*", module):
                    continue
                else:
                    hit = next(
                        (m for n in names if (m := re.search(reason.pattern.replace("{module}", re.escape(n)), line))), None
                    )
                if hit:
                    found = (reason, line.strip(), ref)
                    break
    return found


def _cause(hit: tuple[Reason, str, str] | None, tell: str, unread: str | None) -> Cause:
    if hit is None:
        said = f"not readable ({unread})" if unread else "no message rigaudit knows"
        return Cause(
            key="unknown",
            cause=f"unknown: {said}",
            fix=f"read the reason first: {tell}",
            kind=None,
            again=False,
            line=None,
            told_by=None,
            source=None,
            tell=tell,
        )
    reason, line, ref = hit
    return Cause(
        key=reason.key,
        cause=reason.cause,
        fix=reason.fix,
        kind=reason.kind,
        again=reason.again,
        line=line[:300],
        told_by=ref,
        source=reason.source,
        tell=tell,
    )


def unit_cause(log: UnitLog, reasons: tuple[Reason, ...], kernel_log: str | None = None) -> Cause:
    """The reason ``log``'s unit gave (its own log, journal and status), then the kernel log's about the driver."""
    if log.masked:
        line = next(ln.strip() for ln in log.status.stdout.splitlines() if "Loaded: masked" in ln)
        return _cause((MASKED, line, command_ref(log.status.argv)), log.tell, None)
    hit = _search(reasons, log.texts())
    if hit is None and kernel_log:
        hit = _search(tuple(r for r in KERNEL if r.module is None), [(command_ref(("dmesg",)), kernel_log)])
    return _cause(hit, log.tell + ("; dmesg | grep NVRM" if kernel_log is not None else ""), log.unread)


def log_cause(reasons: tuple[Reason, ...], ref: str, text: str | None, tell: str, unread: str | None) -> Cause:
    """The reason a daemon's own log ``text`` (its last LOG_LINES lines) names; ``unread``: why it could not be read."""
    tail = "\n".join(text.splitlines()[-LOG_LINES:]) if text else ""
    return _cause(_search(reasons, [(ref, tail)]) if tail else None, tell, unread if not tail else None)


def module_cause(module: str, kernel_log: str | None, ref: str = "", unread: str | None = None) -> Cause:
    """Why ``module`` is not loaded, by the kernel log: its own lines first, then nvidia.ko's (NVRM) it depends on."""
    tell = f"dmesg | grep -iE 'NVRM|{module}'; modprobe -v {module} (its error names the reason)"
    if not kernel_log:
        return _cause(None, tell, unread or "the kernel log is empty")
    ref = ref or command_ref(("dmesg",))
    own = _search(tuple(r for r in KERNEL if r.module is not None), [(ref, kernel_log)], module)
    return _cause(own or _search(tuple(r for r in KERNEL if r.module is None), [(ref, kernel_log)]), tell, None)
