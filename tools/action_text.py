"""Render typed actions as the exact shell commands a person would type (reports, scripts, prompts)."""

from __future__ import annotations

import shlex

from rigaudit.tools.model.finding import (
    Action,
    CommandAction,
    ModuleLoadAction,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
)

_WIDTH_SUFFIX = {1: "b", 2: "w", 4: "l"}
_ECAP_NAMES = {0x0001: "ECAP_AER", 0x000D: "ECAP_ACS", 0x0015: "ECAP_REBAR"}


def setpci_register(capability: str) -> str:
    """``exp`` -> ``CAP_EXP``; ``ecap:0x000d`` -> ``ECAP_ACS``; ``header`` -> ``""``."""
    if capability == "exp":
        return "CAP_EXP"
    if capability.startswith("ecap:"):
        number = int(capability.split(":", 1)[1], 16)
        return _ECAP_NAMES.get(number, f"ECAP{number:04x}")
    return ""


def compress_paths(paths: tuple[str, ...]) -> str:
    """``/sys/.../cpu0/cpuidle/state2/disable`` x128 -> ``/sys/.../cpu*/cpuidle/state2/disable``."""
    import re

    patterns = sorted({re.sub(r"/cpu\d+/", "/cpu*/", p) for p in paths})
    return " ".join(patterns)


def shell_lines(action: Action) -> list[str]:
    """The commands that make this change on the host (for humans and reviewed scripts)."""
    if isinstance(action, SysctlAction):
        return [f"sysctl -w {action.key}={shlex.quote(action.value)}"]
    if isinstance(action, SysfsWriteAction):
        pattern = compress_paths(action.paths)
        if " " not in pattern and "*" in pattern:
            return [f'for f in {pattern}; do echo {shlex.quote(action.value)} > "$f"; done']
        return [f"echo {shlex.quote(action.value)} > {shlex.quote(p)}" for p in action.paths]
    if isinstance(action, PciRegisterAction):
        suffix = _WIDTH_SUFFIX[action.width]
        register = setpci_register(action.capability)
        where = f"{register}+{action.offset:#x}" if register else f"{action.offset:#x}"
        digits = action.width * 2
        return [
            f"setpci -s {device} {where}.{suffix}={action.value:0{digits}x}:{action.mask:0{digits}x}" for device in action.devices
        ]
    if isinstance(action, ModuleLoadAction):
        return [f"modprobe {shlex.quote(action.module)}"]
    if isinstance(action, ServiceStartAction):
        return [f"systemctl start {shlex.quote(action.unit)}"]
    assert isinstance(action, CommandAction)
    if action.argv:
        return [shlex.join(action.argv)]
    return [f"# {action.description}"]


def describe(action: Action) -> str:
    """One line saying what the action changes."""
    if isinstance(action, SysctlAction):
        return f"set {action.key} = {action.value}"
    if isinstance(action, SysfsWriteAction):
        return f"write {action.value!r} to {len(action.paths)} file(s): {compress_paths(action.paths)}"
    if isinstance(action, PciRegisterAction):
        register = setpci_register(action.capability) or "config"
        return (
            f"PCI {register}+{action.offset:#x} := {action.value:#06x} under mask {action.mask:#06x} "
            f"on {len(action.devices)} device(s)"
        )
    if isinstance(action, ModuleLoadAction):
        return f"load kernel module {action.module}"
    if isinstance(action, ServiceStartAction):
        return f"start {action.unit}"
    assert isinstance(action, CommandAction)
    return action.description
