"""The NVIDIA kernel driver as the kernel reports it: module version and flavor, loaded modules."""

from __future__ import annotations

import re

PROC_VERSION = "/proc/driver/nvidia/version"
MODULES = "/proc/modules"


def kernel_version(proc_version: str | None) -> tuple[str | None, bool | None]:
    """The version and flavor (open or not) from ``/proc/driver/nvidia/version``."""
    if proc_version is None:
        return None, None
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", proc_version)
    return (match.group(1) if match else None), "Open Kernel Module" in proc_version


def loaded_modules(text: str | None) -> frozenset[str] | None:
    """Module names of ``/proc/modules``."""
    if text is None:
        return None
    return frozenset(line.split()[0] for line in text.splitlines() if line.strip())


def version_key(text: str) -> tuple[int, ...]:
    """``6.8.12-11-pve`` -> (6, 8, 12, 11): enough to order kernel or driver versions."""
    return tuple(int(n) for n in re.findall(r"\d+", text))
