"""How a runtime fix is made to survive a reboot, as the advice a person runs after it.

Each setting gets a file of its own, written whole (``>``): following the advice of several fixes, in any order and
more than once, leaves every setting in place (one shared file written with ``>`` by one fix and ``>>`` by another
lost the earlier line).
"""

from __future__ import annotations


def sysctl_file(key: str) -> str:
    """``vm.zone_reclaim_mode`` -> ``/etc/sysctl.d/90-rigaudit-zone-reclaim-mode.conf``."""
    return f"/etc/sysctl.d/90-rigaudit-{key.rsplit('.', 1)[-1].replace('_', '-')}.conf"


def sysctl_persist(key: str, value: str) -> str:
    """The shell line that keeps ``key = value`` across reboots and loads it now."""
    path = sysctl_file(key)
    return f"echo '{key} = {value}' > {path} && sysctl -p {path}"


__all__ = ["sysctl_file", "sysctl_persist"]
