"""The PCI tree from sysfs paths: the bridges above a device, the switch two devices share.

``readlink /sys/bus/pci/devices/BDF`` gives e.g.
``../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0``:
every BDF component before the last is a bridge, root port first.
"""

from __future__ import annotations

import re

_BDF = r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$"
_ROOT = r"^pci[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}$"


def is_bdf(text: str) -> bool:
    return bool(re.match(_BDF, text))


def device_chain(sysfs_path: str) -> tuple[str, ...]:
    """BDFs along a resolved sysfs path (or a link target), root port first, the device last."""
    return tuple(part.lower() for part in sysfs_path.split("/") if re.match(_BDF, part))


def bridges_above(sysfs_path: str) -> tuple[str, ...]:
    """The bridges between the root complex and the device, root port first."""
    return device_chain(sysfs_path)[:-1]


def root_complex(sysfs_path: str) -> str | None:
    """The host bridge a device hangs from (``pci0000:00``), if the path names one."""
    return next((part for part in sysfs_path.split("/") if re.match(_ROOT, part)), None)


def common_upstream(chain_a: tuple[str, ...], chain_b: tuple[str, ...]) -> str | None:
    """The deepest bridge above both devices (a switch port), or ``None`` when they meet only in the root complex."""
    common: str | None = None
    for a, b in zip(chain_a[:-1], chain_b[:-1], strict=False):
        if a != b:
            break
        common = a
    return common


def bridges_between(chain_a: tuple[str, ...], chain_b: tuple[str, ...]) -> tuple[str, ...]:
    """Bridges below the shared one on either side: the ports that peer traffic between the two
    devices crosses without leaving their common switch (empty if they share no bridge)."""
    common = common_upstream(chain_a, chain_b)
    if common is None:
        return ()
    below_a = chain_a[chain_a.index(common) + 1 : -1]
    below_b = chain_b[chain_b.index(common) + 1 : -1]
    return tuple(dict.fromkeys((*below_a, *below_b)))
