"""Render typed actions as the exact shell commands a person would type (reports, scripts, prompts).

Names come from a host or a snapshot, so each is checked again against its grammar
(:mod:`rigaudit.tools.schema.names`) and ``shlex.quote``'d here, whatever built the Action: a name
that fails is never rendered as a command, only as a comment saying why. Free text (a
description) only ever appears after ``#``, on one line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from rigaudit.tools.schema import names
from rigaudit.tools.schema.finding import (
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
    patterns = sorted({re.sub(r"/cpu\d+/", "/cpu*/", p) for p in paths})
    return " ".join(patterns)


def comment(text: str) -> str:
    """``text`` as one shell comment line (control characters, newlines included, become spaces)."""
    return f"# {names.one_line(text)}".rstrip()


def quoted(check: Callable[[str], str], text: str) -> str:
    """``text`` checked against its grammar and shell-quoted; ``ValueError`` when it is not one."""
    return shlex.quote(check(text))


def _lines(action: Action) -> list[str]:
    if isinstance(action, SysctlAction):
        return [f"sysctl -w {quoted(names.sysctl_key, action.key)}={quoted(names.value_text, action.value)}"]
    if isinstance(action, SysfsWriteAction):
        value = quoted(names.value_text, action.value)
        paths = [names.sysfs_path(p) for p in action.paths]
        pattern = compress_paths(tuple(paths))
        if " " not in pattern and "*" in pattern:  # plain components and one glob: nothing to quote
            return [f'for f in {pattern}; do echo {value} > "$f"; done']
        return [f"echo {value} > {shlex.quote(p)}" for p in paths]
    if isinstance(action, PciRegisterAction):
        suffix = _WIDTH_SUFFIX[action.width]
        register = setpci_register(names.pci_capability(action.capability))
        where = f"{register}+{action.offset:#x}" if register else f"{action.offset:#x}"
        digits = action.width * 2
        return [
            f"setpci -s {quoted(names.bdf, device)} {where}.{suffix}={action.value:0{digits}x}:{action.mask:0{digits}x}"
            for device in action.devices
        ]
    if isinstance(action, ModuleLoadAction):
        return [f"modprobe {quoted(names.module_name, action.module)}"]
    if isinstance(action, ServiceStartAction):
        return [f"systemctl start {quoted(names.unit_name, action.unit)}"]
    assert isinstance(action, CommandAction)
    if action.argv:
        return [shlex.join(action.argv)]
    return [comment(action.description)]


def shell_lines(action: Action) -> list[str]:
    """The commands that make this change on the host (for humans and reviewed scripts).

    An action with a name that is not valid (built without validation) gives one comment saying so.
    """
    try:
        return _lines(action)
    except ValueError as exc:
        return [comment(f"not shown: {exc}")]


def describe(action: Action) -> str:
    """One line saying what the action changes (control characters made spaces)."""
    return names.one_line(_describe(action))


def _describe(action: Action) -> str:
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
