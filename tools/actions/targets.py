"""Targets: the single values an Action changes, each self-contained so a journal can restore it.

A :class:`~tools.model.finding.SysfsWriteAction` on 128 CPUs is 128 targets; a PCI register write
on 8 GPUs is 8. Values are text: file contents, ``0x283f`` for registers, ``loaded``/``absent`` for
modules, the ``systemctl is-active`` word for services.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.action_text import setpci_register
from rigaudit.tools.model.finding import (
    Action,
    ModuleLoadAction,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ValueFileTarget(_Frozen):
    """A kernel value file (``/proc/sys/...`` or sysfs): written whole, compared ignoring whitespace."""

    type: Literal["value_file"] = "value_file"
    path: str
    value: str
    label: str = ""
    """``kernel.numa_balancing`` for a sysctl; empty for sysfs."""

    def describe(self) -> str:
        return self.label or self.path


class PciRegisterTarget(_Frozen):
    """One register of one device's config space, changed only under ``mask``."""

    type: Literal["pci_register"] = "pci_register"
    device: str
    capability: str
    offset: int
    width: Literal[1, 2, 4]
    value: int
    mask: int

    @property
    def config_path(self) -> str:
        return f"/sys/bus/pci/devices/{self.device}/config"

    def describe(self) -> str:
        register = setpci_register(self.capability)
        where = f"{register}+{self.offset:#x}" if register else f"{self.offset:#x}"
        return f"{self.device} {where}"


class ModuleTarget(_Frozen):
    type: Literal["module"] = "module"
    module: str

    def describe(self) -> str:
        return f"module {self.module}"


class ServiceTarget(_Frozen):
    type: Literal["service"] = "service"
    unit: str

    def describe(self) -> str:
        return f"service {self.unit}"


class ConfigFileTarget(_Frozen):
    """A whole configuration file (``--persist``): ``content`` replaces it; before ``None`` = absent."""

    type: Literal["config_file"] = "config_file"
    path: str
    content: str

    def describe(self) -> str:
        return self.path


Target = Annotated[
    ValueFileTarget | PciRegisterTarget | ModuleTarget | ServiceTarget | ConfigFileTarget,
    Field(discriminator="type"),
]
AnyTarget = ValueFileTarget | PciRegisterTarget | ModuleTarget | ServiceTarget | ConfigFileTarget


def sysctl_path(key: str) -> str:
    """``kernel.numa_balancing`` -> ``/proc/sys/kernel/numa_balancing``."""
    return "/proc/sys/" + key.strip().replace(".", "/")


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
