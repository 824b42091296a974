"""GPU errors as a host shows them over time: an Xid and what followed it, application faults of processes that ran
or still run, one NVLink far above its siblings, a corrected-error storm on a GPU's PCIe link.

Each helper returns a changed copy of a description (as :mod:`tests.hostgen.faults` does). Kernel-log lines are the
driver's and the kernel's as printed:

- NVIDIA's driver prints ``NVRM: GPU at PCI:dddd:bb:dd: GPU-<uuid>`` and ``NVRM: GPU Board Serial Number: ...``
  once before a GPU's first Xid (``krcReportXid``), then ``NVRM: Xid (PCI:dddd:bb:dd): N, pid=P, name=C, ...``; Xid 154
  names the recovery action it moves to (``GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
  Required)``). NVML's field ``NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`` (230) reads the action now.
- Linux's AER driver (drivers/pci/pcie/aer.c) prints, for each error message a root port receives, ``AER: Corrected
  error received: BDF`` (5.x), ``AER: Corrected error message received from BDF`` (6.x) or ``AER: Correctable error
  message received from BDF`` (6.16 on, with ``severity=Correctable``), then ``PCIe Bus Error: severity=...,
  type=Physical Layer, (Receiver ID)``, the status/mask line and the bits. From 6.16 the AER messages are rate-limited
  per device and the kernel says how many it dropped: ``aer_ratelimit: N callbacks suppressed``.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.kernel import kernel_tuple
from tests.hostgen.pci import aer_text
from tests.hostgen.procs import write_proc
from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

RECOVERY_FIELD = 230
RECOVERY_NAMES = {0: "None", 1: "GPU Reset Required", 2: "Node Reboot Required"}


def _with(spec: HostSpec, name: str, summary: str, apply: object) -> HostSpec:
    fault = Fault(name, summary, apply)  # type: ignore[arg-type]
    return replace(spec, name=f"{spec.name}+{name}", summary=f"{spec.summary}; FAULT: {summary}", faults=(*spec.faults, fault))


def add_dmesg(built: Built, lines: list[str], at: float) -> None:
    dmesg = built.tree.commands.get(("dmesg",))
    if dmesg is not None and "stdout" in dmesg:
        dmesg["stdout"] += "".join(f"[{at + k / 1000:12.6f}] {line}\n" for k, line in enumerate(lines))


def _bus(built: Built, gpu: int) -> str:
    return built.gpu_states_all[gpu].bdf.rsplit(".", 1)[0]


def _first_xid_header(built: Built, gpu: int) -> list[str]:
    g = built.gpu_states_all[gpu]
    return [f"NVRM: GPU at PCI:{_bus(built, gpu)}: {g.uuid}", f"NVRM: GPU Board Serial Number: {1654123012340 + gpu}"]


def _recovery_154(bus: str, old: int, new: int) -> str:
    return (
        f"NVRM: Xid (PCI:{bus}): 154, GPU recovery action changed from 0x{old:x} ({RECOVERY_NAMES[old]}) to "
        f"0x{new:x} ({RECOVERY_NAMES[new]})"
    )


def recovery_field(action: int) -> list[dict[str, object]]:
    """``nvmlDeviceGetFieldValues(GPU, 230, 0)`` as the snapshot records it (pynvml's struct as a dict, the shape an
    H100 on driver 580.159.04 answered: valueType 1, the action in ``uiVal``)."""
    as_double = struct.unpack("<d", struct.pack("<Q", action))[0]
    small = action & 0xFFFF
    value = {"dVal": as_double, "uiVal": action, "ulVal": action, "ullVal": action, "sllVal": action, "siVal": action}
    value["usVal"] = small
    return [
        {
            "fieldId": RECOVERY_FIELD,
            "scopeId": 0,
            "timestamp": 1733519000123456,
            "latencyUsec": 0,
            "valueType": 1,
            "nvmlReturn": 0,
            "value": value,
        }
    ]


def xid95_reset(
    spec: HostSpec, gpu: int = 3, *, logged_back: bool = True, nvml_now: int | None = None, episodes: int = 1
) -> HostSpec:
    """Xid 95 (uncontained) on ``gpu`` at 71234 s, the driver asking for a reset (Xid 154 -> 0x1); at 71890 s the
    operator reset the GPU (``nvidia-smi -r``): the uncorrectable row's remap applied (rows 0,1,0,0), the volatile
    counts cleared. ``logged_back``: the driver logged Xid 154 back to None; ``nvml_now``: NVML's recovery action
    field as read now (None: not recorded). ``episodes``: the same again every 6,000 s (the header, printed once
    per GPU state the driver builds, again after each reset)."""

    def apply(built: Built) -> None:
        bus = _bus(built, gpu)
        for k in range(episodes):
            add_dmesg(
                built,
                [
                    *_first_xid_header(built, gpu),
                    f"NVRM: Xid (PCI:{bus}): 95, pid={48213 + k}, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
                    _recovery_154(bus, 0, 1),
                ],
                71234.5 + 6000 * k,
            )
            if logged_back:
                add_dmesg(built, [_recovery_154(bus, 1, 0)], 71890.2 + 6000 * k)
        index = built.gpu_states_all[gpu].index
        built.tree.call("nvmlDeviceGetRemappedRows", (index,), [0, 1, 0, 0])
        if nvml_now is not None:
            built.tree.call("nvmlDeviceGetFieldValues", (index, RECOVERY_FIELD, 0), recovery_field(nvml_now))

    said = ("Xid 154 back to None" if logged_back else "no Xid 154 since") + (
        f", NVML recovery action {nvml_now}" if nvml_now is not None else ""
    )
    name = f"xid95-reset-gpu{gpu}" + (f"-x{episodes}" if episodes > 1 else "")
    return _with(spec, name, f"Xid 95 on GPU{gpu} ×{episodes}, GPU reset since each ({said})", apply)


def xid95_pending(spec: HostSpec, gpu: int = 3, *, nvml_now: int | None = 1) -> HostSpec:
    """Xid 95 on ``gpu`` and no reset since: Xid 154 asks for a reset, the uncorrectable row's remap is pending."""

    def apply(built: Built) -> None:
        bus = _bus(built, gpu)
        add_dmesg(
            built,
            [
                *_first_xid_header(built, gpu),
                f"NVRM: Xid (PCI:{bus}): 95, pid=48213, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No",
                _recovery_154(bus, 0, 1),
            ],
            71234.5,
        )
        index = built.gpu_states_all[gpu].index
        built.tree.call("nvmlDeviceGetRemappedRows", (index,), [0, 1, 1, 0])
        if nvml_now is not None:
            built.tree.call("nvmlDeviceGetFieldValues", (index, RECOVERY_FIELD, 0), recovery_field(nvml_now))

    return _with(spec, f"xid95-pending-gpu{gpu}", f"Xid 95 on GPU{gpu}, no reset since (remap pending)", apply)


APP_FAULT_TEXT = {
    13: "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Out Of Range Address",
    31: "Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_c1200000. Fault is "
    "of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    43: "Ch 00000010",
}
"""After ``pid=P, name=C, ``: Xid 13 as a CUDA out-of-range access prints it, Xid 31 an MMU fault, Xid 43 its channel."""


def _server_pid(built: Built) -> tuple[int, str]:
    argvs = {p.argv for p in built.spec.processes}
    pid = min(pid for pid, p in built.procs.items() if p.argv in argvs)
    return pid, built.procs[pid].name


def app_fault(spec: HostSpec, gpu: int = 6, code: int = 13, *, who: str = "exited") -> HostSpec:
    """Application fault ``code`` on ``gpu`` by a process that has exited (``who="exited"``: a user's notebook,
    pid 91822, no /proc entry) or by the host's first serving process, still running (``who="server"``), or by a
    process whose pid and name the server has now, the server started after the Xid (``who="reused"``)."""

    def apply(built: Built) -> None:
        pid, name = (91822, "python") if who == "exited" else _server_pid(built)
        if who == "exited":
            assert pid not in built.procs
        if who == "reused":  # the server's pid and name, but the server started after the Xid: another process
            built.procs[pid] = replace(built.procs[pid], start_ticks=int(64210.75 * 100) + 30_000)
            write_proc(built.tree, built.procs[pid])
        bus = _bus(built, gpu)
        line = f"NVRM: Xid (PCI:{bus}): {code}, pid={pid}, name={name}, {APP_FAULT_TEXT[code]}"
        add_dmesg(built, [*_first_xid_header(built, gpu), line], 64210.75)

    return _with(spec, f"xid{code}-{who}", f"Xid {code} on GPU{gpu} by a process that {who}", apply)


def app_faults_of_many(spec: HostSpec, gpus: tuple[int, ...] = (6,) * 5, code: int = 13) -> HostSpec:
    """Application fault ``code`` once per entry of ``gpus``, each by another process (pids 91822, 91823...), all
    exited: five on GPU6 is one GPU faulting every job; five over five GPUs, five applications' bugs."""

    def apply(built: Built) -> None:
        lines: list[str] = []
        for n, gpu in enumerate(gpus):
            pid = 91822 + n * 7
            assert pid not in built.procs
            if gpu not in gpus[:n]:
                lines += _first_xid_header(built, gpu)
            lines.append(f"NVRM: Xid (PCI:{_bus(built, gpu)}): {code}, pid={pid}, name=python3, {APP_FAULT_TEXT[code]}")
        add_dmesg(built, lines, 64210.75)

    where = "-".join(str(g) for g in dict.fromkeys(gpus))
    return _with(spec, f"xid{code}-many-{where}", f"Xid {code} from {len(gpus)} processes on GPU(s) {where}", apply)


def nvlink_outlier(
    spec: HostSpec, gpu: int = 5, link: int = 7, *, replay: int = 481223, crc_flit: int = 2093118231, crc_data: int = 8812
) -> HostSpec:
    """One NVLink (``gpu``'s ``link``) with CRC and replay counts orders of magnitude above every other link."""

    def apply(built: Built) -> None:
        index = built.gpu_states_all[gpu].index
        for counter, value in ((0, replay), (1, 0), (2, crc_flit), (3, crc_data)):
            built.tree.call("nvmlDeviceGetNvLinkErrorCounter", (index, link, counter), value)

    return _with(
        spec, f"nvlink-outlier-gpu{gpu}-link{link}", f"GPU{gpu} link {link}: {crc_flit} CRC flits, {replay} replays", apply
    )


def nvlink_uniform_replays(spec: HostSpec, replay: int = 3) -> HostSpec:
    """A few replays on every active link of every GPU (no link stands out)."""

    def apply(built: Built) -> None:
        for (fn, args), record in list(built.tree.nvml.items()):
            if fn == "nvmlDeviceGetNvLinkErrorCounter" and args[2] == 0 and "result" in record:
                up = built.tree.nvml.get(("nvmlDeviceGetNvLinkState", args[:2]), {}).get("result") == 1
                if up:
                    built.tree.call(fn, args, replay + args[1] % 3)

    return _with(spec, f"nvlink-replays-{replay}", f"{replay}-{replay + 2} replays on every active link", apply)


def _aer_lines(kernel: str, port: str, device: str, blocks: int, suppressed: int) -> list[str]:
    """The root port ``port``'s AER messages for ``blocks`` corrected Receiver Errors, as this kernel prints them."""
    release = kernel_tuple(kernel)
    word, severity = ("Correctable", "Correctable") if release >= (6, 16) else ("Corrected", "Corrected")
    received = (
        f"AER: {word} error message received from {port}" if release >= (6, 0) else f"AER: Corrected error received: {port}"
    )
    block = [
        f"pcieport {port}: {received}",
        f"pcieport {port}: PCIe Bus Error: severity={severity}, type=Physical Layer, (Receiver ID)",
        f"pcieport {port}:   device [{device}] error status/mask=00000001/00002000",
        f"pcieport {port}:    [ 0] RxErr                  (First)",
    ]
    lines = [line for _ in range(blocks) for line in block]
    if suppressed and release >= (6, 16):
        lines.insert(len(block), f"aer_ratelimit: {suppressed} callbacks suppressed")
    return lines


def aer_storm(
    spec: HostSpec, gpu: int = 2, *, count: int = 184213, blocks: int | None = None, suppressed: int = 3102
) -> HostSpec:
    """Corrected Receiver Errors on the link to ``gpu``, seen by the port above it: ``count`` in its sysfs counter and
    a burst of the kernel's AER messages: from 6.16 rate-limited (12 blocks and the count it dropped), before it each
    one printed (150 blocks here, the rest of the burst gone with the ring buffer's wrap)."""

    def apply(built: Built) -> None:
        limited = kernel_tuple(built.spec.os.kernel) >= (6, 16)
        shown = blocks if blocks is not None else 12 if limited else 150
        port = built.chain(built.gpu_states_all[gpu].bdf)[-2]
        function = built.function(port)
        folder = function.path if function.path.startswith("/sys/") else f"/sys/devices/{function.path}"
        built.tree.file(f"{folder}/aer_dev_correctable", aer_text("correctable", {"RxErr": count}))
        device = f"{function.vendor:04x}:{function.device:04x}"
        add_dmesg(built, _aer_lines(built.spec.os.kernel, port, device, shown, suppressed), 88000.0)

    return _with(spec, f"aer-storm-gpu{gpu}", f"{count} corrected RxErr on GPU{gpu}'s link (its port), a log burst", apply)


def aer_few(spec: HostSpec, gpu: int = 2, count: int = 3) -> HostSpec:
    """A handful of corrected Receiver Errors on the link to ``gpu`` since boot, each logged once at boot."""

    def apply(built: Built) -> None:
        port = built.chain(built.gpu_states_all[gpu].bdf)[-2]
        function = built.function(port)
        folder = function.path if function.path.startswith("/sys/") else f"/sys/devices/{function.path}"
        built.tree.file(f"{folder}/aer_dev_correctable", aer_text("correctable", {"RxErr": count}))
        device = f"{function.vendor:04x}:{function.device:04x}"
        add_dmesg(built, _aer_lines(built.spec.os.kernel, port, device, count, 0), 12.5)

    return _with(spec, f"aer-few-gpu{gpu}", f"{count} corrected RxErr on GPU{gpu}'s link since boot", apply)


def kernel_log_denied(spec: HostSpec) -> HostSpec:
    """``kernel.dmesg_restrict=1`` and an audit without CAP_SYSLOG: dmesg refuses to read the log."""

    def apply(built: Built) -> None:
        built.tree.command(("dmesg",), exit_code=1, stderr="dmesg: read kernel buffer failed: Operation not permitted\n")

    return _with(spec, "dmesg-denied", "dmesg: Operation not permitted (dmesg_restrict)", apply)
