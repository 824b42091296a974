"""Targets: the single values an Action changes, each self-contained so a journal can restore it.

A :class:`~tools.schema.finding.SysfsWriteAction` on 128 CPUs is 128 targets; a PCI register write
on 8 GPUs is 8. Values are text: file contents, ``0x283f`` for registers, ``loaded``/``absent`` for
modules, the ``systemctl is-active`` word for services.

Targets are also what a journal records, and a journal is untrusted input: each field is checked
against its grammar, and :func:`refusal` says whether a target is one an apply can produce at all
(the kernel files, sysctl keys, registers, modules, units and persist files that rigaudit's
fixes touch). Apply never changes, and rollback never restores, anything else.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rigaudit.tools.actions.text import setpci_register
from rigaudit.tools.schema import names
from rigaudit.tools.schema.finding import (
    Action,
    BdfName,
    ModuleLoadAction,
    ModuleName,
    PciCapability,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
    UnitName,
    ValueText,
)


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("a NUL byte in a configuration file")
    return text


KernelFile = Annotated[str, AfterValidator(lambda p: names.kernel_path(p, under=("/proc/sys/", "/sys/")))]
ConfigPath = Annotated[str, AfterValidator(lambda p: names.kernel_path(p, under=("/etc/",)))]
MAX_CONFIG_BYTES = 1024 * 1024
ConfigText = Annotated[str, Field(max_length=MAX_CONFIG_BYTES), AfterValidator(_no_nul)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ValueFileTarget(_Frozen):
    """A kernel value file (``/proc/sys/...`` or sysfs): written whole, compared ignoring whitespace."""

    type: Literal["value_file"] = "value_file"
    path: KernelFile
    value: ValueText
    label: Annotated[str, AfterValidator(lambda k: names.sysctl_key(k) if k else k)] = ""
    """``kernel.numa_balancing`` for a sysctl; empty for sysfs."""

    def describe(self) -> str:
        return self.label or self.path


class PciRegisterTarget(_Frozen):
    """One register of one device's config space, changed only under ``mask``."""

    type: Literal["pci_register"] = "pci_register"
    device: BdfName
    capability: PciCapability
    offset: int = Field(ge=0, lt=4096)
    width: Literal[1, 2, 4]
    value: int = Field(ge=0, lt=1 << 32)
    mask: int = Field(ge=0, lt=1 << 32)

    @property
    def config_path(self) -> str:
        return f"/sys/bus/pci/devices/{self.device}/config"

    def describe(self) -> str:
        register = setpci_register(self.capability)
        where = f"{register}+{self.offset:#x}" if register else f"{self.offset:#x}"
        return f"{self.device} {where}"


class ModuleTarget(_Frozen):
    type: Literal["module"] = "module"
    module: ModuleName

    def describe(self) -> str:
        return f"module {self.module}"


class ServiceTarget(_Frozen):
    type: Literal["service"] = "service"
    unit: UnitName

    def describe(self) -> str:
        return f"service {self.unit}"


class ConfigFileTarget(_Frozen):
    """A whole configuration file (``--persist``): ``content`` replaces it; before ``None`` = absent."""

    type: Literal["config_file"] = "config_file"
    path: ConfigPath
    content: ConfigText

    def describe(self) -> str:
        return self.path


Target = Annotated[
    ValueFileTarget | PciRegisterTarget | ModuleTarget | ServiceTarget | ConfigFileTarget,
    Field(discriminator="type"),
]
AnyTarget = ValueFileTarget | PciRegisterTarget | ModuleTarget | ServiceTarget | ConfigFileTarget


def sysctl_path(key: str) -> str:
    """``kernel.numa_balancing`` -> ``/proc/sys/kernel/numa_balancing``."""
    return "/proc/sys/" + names.sysctl_key(key.strip()).replace(".", "/")


_CPU = r"/sys/devices/system/cpu"
_BIT = r"[01]"
_HUGE_PAGES = 1 << 20
"""At most 2 TiB of 2 MiB pages: the most huge pages a rule of rigaudit sets, in a pool or in all."""
SYSFS_FILES: dict[re.Pattern[str], re.Pattern[str] | tuple[int, int]] = {
    re.compile(pattern): values if isinstance(values, tuple) else re.compile(values)
    for pattern, values in (
        (rf"{_CPU}/cpu\d+/cpuidle/state\d+/disable", _BIT),
        (rf"{_CPU}/(?:cpu\d+/cpufreq|cpufreq/policy\d+)/scaling_governor", r"performance|powersave|schedutil|ondemand"),
        (
            rf"{_CPU}/(?:cpu\d+/cpufreq|cpufreq/policy\d+)/energy_performance_preference",
            r"performance|balance_performance|default|balance_power|power",
        ),
        (rf"{_CPU}/cpufreq/boost", _BIT),
        (rf"{_CPU}/intel_pstate/no_turbo", _BIT),
        (rf"{_CPU}/amd_pstate/status", r"active|passive|guided"),
        (r"/sys/kernel/mm/transparent_hugepage/enabled", r"always|madvise|never"),
        (r"/sys/kernel/mm/transparent_hugepage/defrag", r"always|defer|defer\+madvise|madvise|never"),
        (r"/sys/kernel/mm/hugepages/hugepages-\d+kB/nr_hugepages", (0, _HUGE_PAGES)),
        (r"/sys/devices/system/node/node\d+/hugepages/hugepages-\d+kB/nr_hugepages", (0, _HUGE_PAGES)),
    )
}
"""The sysfs files a fix of rigaudit writes (cpuidle, governor, EPP, boost, amd_pstate, THP, huge pages), each with
the values its rule may write there: the words the kernel takes, or a range of whole numbers."""
SYSCTL_RANGES = {
    "kernel.numa_balancing": (0, 3),
    "vm.swappiness": (0, 200),
    "vm.nr_hugepages": (0, _HUGE_PAGES),
    "vm.zone_reclaim_mode": (0, 7),
}
"""The values rigaudit's rules may set for each sysctl key (huge pages: at most 2 TiB of 2 MiB pages)."""
SYSCTL_KEYS = frozenset(SYSCTL_RANGES)
MODULES = frozenset({"nvidia_peermem", "nvidia-peermem", "nvidia_uvm", "nvidia-uvm"})
UNITS = frozenset({"nvidia-persistenced", "nvidia-fabricmanager", "nvidia-persistenced.service", "nvidia-fabricmanager.service"})
PCI_REGISTERS = frozenset({("exp", 8, 2, 0x7000), ("ecap:0x000d", 6, 2, 0x000C)})
"""(capability, offset, width, mask): PCIe MaxReadReq (DevCtl 14:12) and ACS P2P redirect (ACSCtl 3:2)."""
PERSIST_FILES = frozenset(
    {
        "/etc/sysctl.d/90-rigaudit.conf",
        "/etc/modules-load.d/rigaudit.conf",
        "/etc/tmpfiles.d/rigaudit.conf",
        "/etc/udev/rules.d/90-rigaudit.rules",
    }
)


def _value_refusal(what: str, value: str, values: re.Pattern[str] | tuple[int, int]) -> str | None:
    """Why ``value`` is not one rigaudit's rule may write to ``what`` (``None``: it is)."""
    if isinstance(values, tuple):
        low, high = values
        if value.isdecimal() and low <= int(value) <= high:
            return None
        return f"{what}={value[:40]} is outside the range rigaudit's rule declares ({low}..{high})"
    if values.fullmatch(value):
        return None
    return f"{what}={value[:40]} is not a value rigaudit's rule writes ({values.pattern.replace('|', ', ')})"


def refusal(target: AnyTarget) -> str | None:
    """Why no apply of rigaudit changes ``target`` (``None``: it is one that an apply can produce)."""
    if isinstance(target, ValueFileTarget):
        if target.path.startswith("/proc/sys/"):
            key = target.label or target.path.removeprefix("/proc/sys/").replace("/", ".")
            if key not in SYSCTL_KEYS or sysctl_path(key) != target.path:
                return f"sysctl {key} is not one rigaudit changes"
            return _value_refusal(f"sysctl {key}", target.value.strip(), SYSCTL_RANGES[key])
        values = next((v for p, v in SYSFS_FILES.items() if p.fullmatch(target.path)), None)
        if values is None:
            return f"{target.path} is not a kernel file rigaudit writes"
        return _value_refusal(target.path, target.value.strip(), values)
    if isinstance(target, PciRegisterTarget):
        if (target.capability.lower(), target.offset, target.width, target.mask) not in PCI_REGISTERS:
            return f"register {target.describe()} under mask {target.mask:#x} is not one rigaudit changes"
        return None
    if isinstance(target, ModuleTarget):
        return None if target.module in MODULES else f"module {target.module} is not one rigaudit loads"
    if isinstance(target, ServiceTarget):
        return None if target.unit in UNITS else f"unit {target.unit} is not one rigaudit starts"
    return None if target.path in PERSIST_FILES else f"{target.path} is not a persist file of rigaudit"


def expand(action: Action) -> list[AnyTarget]:
    """The targets an action changes; ``CommandAction`` has none (it is never executed)."""
    if isinstance(action, SysctlAction):
        return [ValueFileTarget(path=sysctl_path(action.key), value=action.value, label=action.key)]
    if isinstance(action, SysfsWriteAction):
        return [ValueFileTarget(path=path, value=action.value) for path in action.paths]
    if isinstance(action, PciRegisterAction):
        return [
            PciRegisterTarget(
                device=device,
                capability=action.capability,
                offset=action.offset,
                width=action.width,
                value=action.value,
                mask=action.mask,
            )
            for device in action.devices
        ]
    if isinstance(action, ModuleLoadAction):
        return [ModuleTarget(module=action.module)]
    if isinstance(action, ServiceStartAction):
        return [ServiceTarget(unit=action.unit)]
    return []
