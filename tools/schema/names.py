"""What a host-derived name may look like before it reaches a shell line or a kernel file.

PCI addresses, sysctl keys, module names, systemd units and sysfs paths come from a host or a
snapshot (a listing, an NVML bus id) and end up in ``setpci``/``sysctl``/``modprobe`` lines that a
person runs, and in files rigaudit writes. Each is checked against its grammar here: at an
Action's construction (the pydantic validators of :mod:`rigaudit.tools.schema.finding`) and again
when it is rendered (:mod:`rigaudit.tools.actions.text`), where it is also ``shlex.quote``'d.
Every check returns the name, or raises ``ValueError`` with one line.
"""

from __future__ import annotations

import re

_BDF = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_SYSCTL = r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)+"
_MODULE = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}"
_UNIT = r"[A-Za-z0-9_:][A-Za-z0-9_:.@-]{0,254}"
_COMPONENT = r"[A-Za-z0-9_:+@,=-][A-Za-z0-9_.:+@,=-]*"
_CAPABILITY = r"header|exp|ecap:0x[0-9a-fA-F]{1,4}"
_CONTROL = r"[\x00-\x1f\x7f]"
MAX_VALUE = 4096
MAX_PATH = 4096


def _shown(text: str) -> str:
    return repr(text[:60]) + ("..." if len(text) > 60 else "")


def bdf(text: str) -> str:
    """A PCI address ``DDDD:BB:DD.F``."""
    if not re.fullmatch(_BDF, text):
        raise ValueError(f"{_shown(text)} is not a PCI address (DDDD:BB:DD.F)")
    return text


def sysctl_key(text: str) -> str:
    """A dotted sysctl key: ``kernel.numa_balancing``."""
    if len(text) > 255 or not re.fullmatch(_SYSCTL, text):
        raise ValueError(f"{_shown(text)} is not a sysctl key (dotted words: kernel.numa_balancing)")
    return text


def module_name(text: str) -> str:
    """A kernel module name: ``nvidia_peermem``."""
    if not re.fullmatch(_MODULE, text):
        raise ValueError(f"{_shown(text)} is not a kernel module name")
    return text


def unit_name(text: str) -> str:
    """A systemd unit name: ``nvidia-persistenced`` or ``nvidia-fabricmanager.service``."""
    if not re.fullmatch(_UNIT, text):
        raise ValueError(f"{_shown(text)} is not a systemd unit name")
    return text


def kernel_path(text: str, *, under: tuple[str, ...] = ("/sys/",)) -> str:
    """An absolute path under one of ``under`` made of plain components (no ``..``, no spaces, no quotes)."""
    parts = text.split("/")[1:]
    if (
        len(text) > MAX_PATH
        or not text.startswith(under)
        or not parts
        or any(p in ("", ".", "..") or not re.fullmatch(_COMPONENT, p) for p in parts)
    ):
        raise ValueError(f"{_shown(text)} is not a plain path under {' or '.join(u.rstrip('/') for u in under)}")
    return text


def sysfs_path(text: str) -> str:
    """A plain path under /sys."""
    return kernel_path(text, under=("/sys/",))


def value_text(text: str) -> str:
    """A value written to a kernel file: one line of printable text, at most 4096 characters."""
    if len(text) > MAX_VALUE or re.search(_CONTROL, text.removesuffix("\n")):
        raise ValueError(f"{_shown(text)} is not one line of printable text")
    return text


def pci_capability(text: str) -> str:
    """``header``, ``exp`` or ``ecap:0xNNNN``."""
    if not re.fullmatch(_CAPABILITY, text):
        raise ValueError(f"{_shown(text)} is not a PCI capability (header, exp, ecap:0xNNNN)")
    return text


def one_line(text: str) -> str:
    """``text`` with every control character (newlines included) made a space: safe after ``#``."""
    return re.sub(_CONTROL, " ", text)


__all__ = [
    "bdf",
    "kernel_path",
    "module_name",
    "one_line",
    "pci_capability",
    "sysctl_key",
    "sysfs_path",
    "unit_name",
    "value_text",
]
