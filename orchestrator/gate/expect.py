"""``--expect FILE``: the values every node of a fleet must show, judged as checks ``expect.<key>``.

The file has one ``key = value`` a line (``key: value`` too; ``#`` starts a comment; a value may be
quoted), as NHC's and aznhc's configurations name a fleet's driver, GPU count or link width::

    driver = 580.95.*        # glob: the NVIDIA driver (NVML, else /sys/module/nvidia/version)
    gpus = 8                 # exactly this many NVIDIA GPUs
    pcie_width = 16          # every GPU's current link width at least this
    pcie_gen = 5             # every GPU's link can reach at least this generation in this system (VM: runs at it)
    gpu_model = NVIDIA H200  # glob: every GPU's name
    vbios = 96.00.*          # glob: every GPU's VBIOS
    kernel = 6.8.0-*         # glob: the running kernel
    cuda = 13.0              # glob: the CUDA version the driver supports

An expectation that does not hold is a problem (``critical`` for a missing GPU, ``high`` otherwise);
one whose fact cannot be read is ``unknown``, which the gate counts as "could not check" since it
was asked for. The expectations run as one more investigator (area ``expect``), sharing the audit's
reads.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from rigaudit.agents.check import Check
from rigaudit.agents.facts.gpus import Gpu, GpuInventory, collect_gpus
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.facts.vgpu import hypervisor_side
from rigaudit.agents.findings import ok, problem, unknown
from rigaudit.agents.investigator import Investigator
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.pci import SPEEDS_GTS
from rigaudit.tools.pci.sysfs import read_chain, read_link
from rigaudit.tools.schema.finding import Finding, Fix, FixKind, Severity

AREA = "expect"
MAX_FILE_BYTES = 64 * 1024
MODULE_VERSION = "/sys/module/nvidia/version"
OSRELEASE = "/proc/sys/kernel/osrelease"
UNREADABLE_NVML = frozenset({"NOT_RECORDED", "NO_PERMISSION", "TIMEOUT"})
"""NVML errors that say nothing about the host (a snapshot without the call, a refused or slow read)."""
_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(.*?)\s*$")
_DIGITS = re.compile(r"-?[0-9]{1,9}")
_COMMENT = re.compile(r"(^|\s)#.*$")
"""A ``#`` at the start of a line or after a blank starts a comment (``#`` inside a value is kept)."""


class Key(Record):
    """One expectation the file may name."""

    check: Check
    kind: str
    """``glob`` (text patterns), ``count`` (exactly N) or ``minimum`` (at least N)."""
    severity: Severity
    fix_kind: FixKind
    fix: str


def _key(name: str, title: str, reads: str, kind: str, severity: Severity, fix_kind: FixKind, fix: str) -> Key:
    problem_when = {"glob": "the value does not match", "count": "another number", "minimum": "less than expected"}[kind]
    check = Check(f"{AREA}.{name}", title, reads=reads, problem=problem_when, fix=fix, kinds=(fix_kind,))
    return Key(check, kind, severity, fix_kind, fix)


KEYS: dict[str, Key] = {
    k.check.id.split(".", 1)[1]: k
    for k in (
        _key(
            "driver",
            "The fleet's NVIDIA driver version",
            "NVML driver version, else /sys/module/nvidia/version",
            "glob",
            "high",
            "reboot",
            "install the fleet's driver release and reboot (or reload the modules)",
        ),
        _key(
            "gpus",
            "The fleet's number of GPUs",
            "NVML device count, else the NVIDIA display controllers in /sys/bus/pci/devices",
            "count",
            "critical",
            "hardware",
            "a GPU is missing: look for Xid 79 (fallen off the bus) in the kernel log, reseat or replace it",
        ),
        _key(
            "pcie_width",
            "The fleet's PCIe link width",
            "NVML current link width of every GPU, else sysfs current_link_width",
            "minimum",
            "high",
            "hardware",
            "reseat the GPU or its riser; check the slot's lane bifurcation in the BIOS",
        ),
        _key(
            "pcie_gen",
            "The fleet's PCIe generation",
            "NVML max link generation of every GPU in this system, else sysfs max_link_speed; in a VM guest the GPU's "
            "own max and current generation (the ports above are emulated)",
            "minimum",
            "high",
            "firmware",
            "set the slot's PCIe generation in the BIOS; a riser or retimer may limit it",
        ),
        _key(
            "gpu_model",
            "The fleet's GPU model",
            "NVML name of every GPU",
            "glob",
            "high",
            "hardware",
            "this node holds other GPUs than the fleet: fix the inventory or the node's partition",
        ),
        _key(
            "vbios",
            "The fleet's VBIOS version",
            "NVML VBIOS version of every GPU",
            "glob",
            "high",
            "firmware",
            "flash the fleet's VBIOS (the vendor's tool), then reboot",
        ),
        _key(
            "kernel",
            "The fleet's kernel",
            "/proc/sys/kernel/osrelease",
            "glob",
            "high",
            "reboot",
            "boot the fleet's kernel",
        ),
        _key(
            "cuda",
            "The fleet's CUDA driver version",
            "NVML CUDA driver version",
            "glob",
            "high",
            "reboot",
            "install the driver release that supports the fleet's CUDA version",
        ),
    )
}
"""Every key the file may name, in the order the checks are listed."""

GENERATIONS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
"""PCIe generation -> GT/s."""


class Expectations(Record):
    """The parsed file: key -> the expected value as written (patterns) or as a number."""

    values: Mapping[str, str | int]
    path: str = ""

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(KEYS[k].check for k in KEYS if k in self.values)


def _number(key: str, text: str, where: str) -> int:
    wanted = text.lower().removeprefix("gen").removeprefix("x") if key in ("pcie_gen", "pcie_width") else text
    if not _DIGITS.fullmatch(wanted):  # int() also takes 1_0, +8 and non-ASCII digits
        raise UsageError(f"{where}: {key} needs a whole number, not {text[:40]!r}{'...' if len(text) > 40 else ''}")
    value = int(wanted)
    if value < 0 or (key == "pcie_gen" and value not in GENERATIONS):
        raise UsageError(f"{where}: {key} = {text} is out of range")
    return value


def parse_expectations(text: str, source: str = "--expect") -> Expectations:
    """The expectations in ``text``; a line that is not ``key = value`` of a known key is a usage error."""
    values: dict[str, str | int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        where = f"{source}:{number}"
        match = _LINE.match(line)
        if match is None:
            raise UsageError(f"{where}: expected `key = value`, got {raw.strip()[:60]!r}")
        key, value = match.group(1).lower(), match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key not in KEYS:
            raise UsageError(f"{where}: unknown key {key!r} (keys: {', '.join(KEYS)})")
        if key in values:
            raise UsageError(f"{where}: {key} is given twice")
        if not value:
            raise UsageError(f"{where}: {key} has no value")
        if not value.isprintable():  # a NUL or an escape no host prints: every node would fail, and be drained
            raise UsageError(f"{where}: {key} has a control character in its value {value[:40]!r}")
        values[key] = _number(key, value, where) if KEYS[key].kind != "glob" else value
    if not values:
        raise UsageError(f"{source}: names no expectation (keys: {', '.join(KEYS)})")
    return Expectations(values, source)


def load_expectations(path: Path) -> Expectations:
    """Read and parse ``--expect FILE`` (a regular file of at most 64 KiB)."""
    from rigaudit.tools.files.bounded import InputError, read_regular

    try:  # a regular file, opened non-blocking: a FIFO swapped in after a check cannot hang the gate
        data = read_regular(path, limit=MAX_FILE_BYTES, what=f"--expect {path}")
    except InputError as exc:
        if "larger than" in str(exc):
            raise UsageError(f"--expect {path}: larger than {MAX_FILE_BYTES // 1024} KiB") from None
        raise
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is no part of the first line
    except UnicodeDecodeError:
        raise UsageError(f"--expect {path}: not UTF-8 text") from None
    return parse_expectations(text, str(path))


# -- facts --------------------------------------------------------------------------------------


class GpuFacts(Record):
    gpu: Gpu
    name: str | None
    width: int | None
    gen: int | None
    vbios: str | None
    gpu_max_gen: int | None = None
    """In a VM guest: the GPU's own max generation (NVML), and the one its link runs at now."""
    cur_gen: int | None = None


class ExpectFacts(Record):
    inventory: GpuInventory
    pci_listed: bool
    module_version: str | None
    kernel: str | None
    cuda: str | None
    cuda_error: str | None
    gpus: tuple[GpuFacts, ...]
    in_container: bool = False
    in_vm: bool = False


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gen_of(gts: float | None) -> int | None:
    return next((g for g, s in SPEEDS_GTS.items() if gts is not None and abs(s - gts) < 0.01), None)


async def _sysfs_gen(probe: Probe, gpu: Gpu, in_vm: bool) -> int | None:
    """The generation the GPU's link can reach from sysfs: the lower of its own ``max_link_speed`` (what the GPU
    supports) and its slot's (the port above it), as NVML's max generation "with this device and system" is.
    ``None`` in a VM guest (the port above is emulated) or when either end is unreadable."""
    if in_vm:
        return None
    chain = await read_chain(probe, gpu.bdf)
    if not chain.bridges:
        return None
    own, slot = await probe.gather(lambda: read_link(probe, gpu.bdf), lambda: read_link(probe, chain.bridges[-1]))
    ends = [_gen_of(own.max_speed), _gen_of(slot.max_speed)]
    return min(g for g in ends if g is not None) if None not in ends else None


async def _gpu_facts(probe: Probe, gpu: Gpu, keys: Mapping[str, object], in_vm: bool) -> GpuFacts:
    width = gen = gpu_max_gen = cur_gen = None
    name = vbios = None
    if gpu.index is not None:
        if "pcie_width" in keys:
            width = _int((await probe.nvml("nvmlDeviceGetCurrPcieLinkWidth", gpu.index)).value)
        if "pcie_gen" in keys:
            gen = _int((await probe.nvml("nvmlDeviceGetMaxPcieLinkGeneration", gpu.index)).value)
            if in_vm:
                own = await probe.nvml("nvmlDeviceGetGpuMaxPcieLinkGeneration", gpu.index)
                cur = await probe.nvml("nvmlDeviceGetCurrPcieLinkGeneration", gpu.index)
                gpu_max_gen, cur_gen = _int(own.value), _int(cur.value)
        if "vbios" in keys:
            result = await probe.nvml("nvmlDeviceGetVbiosVersion", gpu.index)
            vbios = str(result.value) if result.ok and result.value else None
        name = gpu.name
    if "pcie_width" in keys and width is None:
        # 0 is no width: vfio shows a GPU on a VM guest's root bus as an integrated endpoint whose Link Status is zero
        width = (await read_link(probe, gpu.bdf)).current_width or None
    if "pcie_gen" in keys and gen is None:
        gen = await _sysfs_gen(probe, gpu, in_vm)
    return GpuFacts(gpu, name, width, gen, vbios, gpu_max_gen, cur_gen)


def collector(expectations: Expectations) -> Callable[[Probe], Awaitable[ExpectFacts]]:
    keys = expectations.values

    async def collect(probe: Probe) -> ExpectFacts:
        inventory = await collect_gpus(probe)
        listing = (await probe.list_dir("/sys/bus/pci/devices")).entries
        # the bus as the node has it: listed, and showing the GPUs NVML does (a container may hide it)
        listed = listing is not None and {g.bdf for g in inventory.gpus} <= set(listing)
        module = await probe.text(MODULE_VERSION) if "driver" in keys else None
        kernel = await probe.text(OSRELEASE) if "kernel" in keys else None
        cuda = cuda_error = None
        if "cuda" in keys:
            result = await probe.nvml("nvmlSystemGetCudaDriverVersion")
            if result.ok and _int(result.value) is not None:
                value = _int(result.value) or 0
                cuda = f"{value // 1000}.{value % 1000 // 10}"
            cuda_error = result.error
        platform = await detect_platform(probe)
        gpus = await probe.gather(*[lambda g=g: _gpu_facts(probe, g, keys, platform.in_vm) for g in inventory.gpus])
        return ExpectFacts(
            inventory,
            listed,
            module.strip() if module and module.strip() else None,
            kernel.strip() if kernel and kernel.strip() else None,
            cuda,
            cuda_error,
            tuple(gpus),
            platform.in_container,
            platform.in_vm,
        )

    return collect


# -- judgement ------------------------------------------------------------------------------------


def _fix(key: Key) -> Fix:
    return Fix(kind=key.fix_kind, where="host", summary=key.fix)


def _finding(key: Key, failures: list[str], observed: str, expected: str) -> Finding:
    check = key.check
    if failures:
        text = f"{'; '.join(failures)} (expected {expected})"
        return problem(
            check.id, AREA, check.title, key.severity, text, expected, f"the fleet expects {expected}: {text}", _fix(key)
        )
    return ok(check.id, AREA, check.title, observed, expected=expected)


def _glob(name: str, pattern: str, observed: str | None, why: str) -> Finding:
    key = KEYS[name]
    if observed is None:
        return unknown(key.check.id, AREA, key.check.title, why)
    failures = [] if fnmatch.fnmatchcase(observed, pattern) else [observed]
    return _finding(key, failures, observed, pattern)


def _per_gpu(name: str, facts: ExpectFacts, expected: str | int) -> Finding:
    key = KEYS[name]
    check = key.check
    if not facts.gpus:
        why = "no NVIDIA GPU found" if facts.pci_listed else "the PCI devices could not be listed"
        return unknown(check.id, AREA, check.title, why)
    field = {"pcie_width": "width", "pcie_gen": "gen", "gpu_model": "name", "vbios": "vbios"}[name]
    values = [(g.gpu.label, getattr(g, field)) for g in facts.gpus]
    missing = [label for label, value in values if value is None]
    if name in ("pcie_gen", "pcie_width") and (hidden := hypervisor_side(facts.inventory, "the PCIe link")):
        return unknown(check.id, AREA, check.title, hidden)
    if missing and name == "pcie_gen" and facts.in_vm and not facts.inventory.nvml_ok:
        why = "in a VM guest the port above each GPU is emulated: NVML's link generations would tell (no NVML here)"
        return unknown(check.id, AREA, check.title, why)
    if missing and name == "pcie_width" and facts.in_vm:
        why = (
            f"link width not readable for {', '.join(missing)}: in a VM guest a GPU on the guest's root bus has no link "
            "of its own to show (vfio reports its Link Status as zero)"
            + ("; NVML's current link width would tell" if not facts.inventory.nvml_ok else "")
            + ", or lspci -vvv -s the GPU's host address on the hypervisor"
        )
        return unknown(check.id, AREA, check.title, why)
    if name == "pcie_gen" and facts.in_vm and isinstance(expected, int):
        return _guest_gen(facts, expected)
    if missing:
        return unknown(check.id, AREA, check.title, f"{field} not readable for {', '.join(missing)}")
    if isinstance(expected, int):
        shown = {"width": "x{}", "gen": "Gen{}"}[field]
        failures = [f"{label} {shown.format(value)}" for label, value in values if int(value) < expected]
        return _finding(key, failures, f"{len(values)} GPU(s) at {shown.format(expected)} or more", f"{shown.format(expected)}+")
    failures = [f"{label} {value}" for label, value in values if not fnmatch.fnmatchcase(str(value), expected)]
    return _finding(key, failures, f"{len(values)} GPU(s): {values[0][1]}", str(expected))


def _guest_gen(facts: ExpectFacts, expected: int) -> Finding:
    """pcie_gen in a VM guest. NVML's max generation "with this system" is the lower of the GPU's and the port above
    it as the driver reads that port, through the guest's config space: the hypervisor's emulated root port (QEMU's
    pcie-root-port says 16 GT/s unless told otherwise, 2.5 GT/s on machine types before 4.0), not the slot. What
    the guest can trust is the GPU's own capability and the speed its link runs at (the GPU's Link Status, which
    vfio passes through): a GPU that cannot reach the generation fails, a link running at it passes, the rest is
    unknown with what would tell."""
    key = KEYS["pcie_gen"]
    check = key.check
    failures, passed, untold = [], [], []
    for g in facts.gpus:
        own = g.gpu_max_gen if g.gpu_max_gen is not None else None
        if own is not None and own < expected:
            failures.append(f"{g.gpu.label} Gen{own} (the GPU's own maximum)")
        elif g.cur_gen is not None and g.cur_gen >= expected:
            passed.append(g.gpu.label)
        else:
            seen = f"GPU max Gen{own}" if own is not None else "GPU max not readable"
            seen += f", link at Gen{g.cur_gen} now" if g.cur_gen is not None else ", current link not readable"
            seen += f", max in this system Gen{g.gen} (the emulated port's)" if g.gen is not None else ""
            untold.append(f"{g.gpu.label} ({seen})")
    wanted = f"Gen{expected}+"
    if failures:
        return _finding(key, failures, "", wanted)
    if untold:
        why = (
            "in a VM guest the port above each GPU is the hypervisor's emulation, so NVML's max generation in this "
            f"system is that port's, not the physical slot's: {'; '.join(untold)}. Links train down at idle: re-check "
            "with the GPUs under load, or read the GPU's LnkSta on the hypervisor (lspci -vvv -s its host address)"
        )
        return unknown(check.id, AREA, check.title, why)
    observed = (
        f"{len(passed)} GPU(s) with links running at {wanted} (the GPUs' own link status; the guest's root ports are emulated)"
    )
    return ok(check.id, AREA, check.title, observed, expected=wanted)


def _driver(facts: ExpectFacts, pattern: str) -> Finding:
    inventory = facts.inventory
    version = inventory.driver_version or facts.module_version
    if version is not None:
        return _glob("driver", pattern, version, "")
    error = inventory.nvml_error or "no answer"
    if error in UNREADABLE_NVML:
        return _glob("driver", pattern, None, f"driver version not readable (NVML: {error})")
    return _finding(KEYS["driver"], [f"no usable NVIDIA driver (NVML: {error}; {MODULE_VERSION} absent)"], "", pattern)


def _gpus(facts: ExpectFacts, expected: int) -> Finding:
    key = KEYS["gpus"]
    inventory = facts.inventory
    seen = len(inventory.gpus)
    if inventory.nvml_count is None and not facts.pci_listed:
        return unknown(key.check.id, AREA, key.check.title, "neither NVML nor /sys/bus/pci/devices could be read")
    count = inventory.nvml_count if inventory.nvml_count is not None else seen
    detail = f"{count} GPU(s)" + (
        f" (NVML {inventory.nvml_count}, PCI {seen})" if inventory.nvml_count not in (None, seen) else ""
    )
    if (facts.in_container or inventory.confined) and inventory.nvml_count is not None:
        # NVML shows the GPUs this container (or job step) was given; the node's PCI bus (sysfs is not namespaced) the rest.
        here = inventory.confined or "this container"
        if inventory.elsewhere:
            count = inventory.nvml_count + inventory.elsewhere
            detail = f"{count} GPU(s) on the node's PCI bus: {inventory.nvml_count} given to {here}, {inventory.elsewhere} more"
        elif not facts.pci_listed and count < expected:
            why = (
                f"{count} GPU(s) given to {here} and the node's PCI bus cannot be listed from it: "
                "run the check on the host, or in a container given every GPU (NVIDIA_VISIBLE_DEVICES=all)"
            )
            return unknown(key.check.id, AREA, key.check.title, why)
    failures = [] if count == expected else [detail]
    return _finding(key, failures, detail, str(expected))


def judge(expectations: Expectations, facts: ExpectFacts) -> list[Finding]:
    """One finding per expectation, in :data:`KEYS` order."""
    values = expectations.values
    found: list[Finding] = []
    for name in KEYS:
        if name not in values:
            continue
        wanted = values[name]
        if name == "driver":
            found.append(_driver(facts, str(wanted)))
        elif name == "gpus":
            found.append(_gpus(facts, int(wanted)))
        elif name == "kernel":
            found.append(_glob(name, str(wanted), facts.kernel, f"{OSRELEASE} not readable"))
        elif name == "cuda":
            found.append(_glob(name, str(wanted), facts.cuda, f"CUDA driver version not readable (NVML: {facts.cuda_error})"))
        else:
            found.append(_per_gpu(name, facts, wanted))
    return found


def investigator(expectations: Expectations) -> Investigator[ExpectFacts]:
    """The expectations as an investigator the audit runs with the others."""
    return Investigator(
        area=AREA,
        title="The fleet's expected values (--expect)",
        checks=expectations.checks,
        collect=collector(expectations),
        judge=lambda facts: judge(expectations, facts),
    )


__all__ = ["KEYS", "Expectations", "investigator", "load_expectations", "parse_expectations"]
