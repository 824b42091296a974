"""``--persist``: the configuration files that re-apply runtime fixes at every boot.

- sysctls -> ``/etc/sysctl.d/90-rigaudit.conf`` (``systemd-sysctl``)
- modules -> ``/etc/modules-load.d/rigaudit.conf`` (``systemd-modules-load``)
- sysfs writes (cpuidle, governor, EPP, boost) -> ``/etc/tmpfiles.d/rigaudit.conf`` (``w`` lines,
  written by ``systemd-tmpfiles-setup`` at boot: no unit to enable)
- PCI register writes -> ``/etc/udev/rules.d/90-rigaudit.rules`` (``setpci`` when the device appears)

Existing content is kept; only missing lines are added. Each file is a :class:`ConfigFileTarget`,
journaled like any change (before = the old content, or absent), so rollback restores or removes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.actions.ops import read_value
from rigaudit.tools.actions.targets import ConfigFileTarget
from rigaudit.tools.actions.text import shell_lines
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.finding import (
    Action,
    ModuleLoadAction,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
)

SYSCTL_FILE = "/etc/sysctl.d/90-rigaudit.conf"
MODULES_FILE = "/etc/modules-load.d/rigaudit.conf"
TMPFILES_FILE = "/etc/tmpfiles.d/rigaudit.conf"
UDEV_FILE = "/etc/udev/rules.d/90-rigaudit.rules"
HEADER = "# Written by `rigaudit apply --persist`; `rigaudit rollback JOURNAL` restores or removes this file.\n"


def persist_lines(actions: Sequence[Action]) -> dict[str, list[str]]:
    """The lines each persist file needs for these (verified) actions, by file."""
    files: dict[str, list[str]] = {}

    def add(path: str, line: str) -> None:
        lines = files.setdefault(path, [])
        if line not in lines:
            lines.append(line)

    for action in actions:
        if isinstance(action, SysctlAction):
            add(SYSCTL_FILE, f"{action.key} = {action.value}")
        elif isinstance(action, ModuleLoadAction):
            add(MODULES_FILE, action.module)
        elif isinstance(action, SysfsWriteAction):
            for path in action.paths:
                add(TMPFILES_FILE, f"w {path} - - - - {action.value}")
        elif isinstance(action, PciRegisterAction):
            for device in action.devices:
                (command,) = shell_lines(action.model_copy(update={"devices": (device,)}))
                if command.startswith("#") or "'" in command or '"' in command:
                    continue  # never a rule from a name that is not a plain PCI address
                add(UDEV_FILE, f'ACTION=="add", SUBSYSTEM=="pci", KERNEL=="{device}", RUN+="/bin/sh -c \'{command}\'"')
    return files


def manual_persist(actions: Sequence[Action]) -> list[str]:
    """What ``--persist`` does not write itself (services are enabled by the person)."""
    return [f"systemctl enable {a.unit}" for a in actions if isinstance(a, ServiceStartAction)]


async def persist_targets(host: Host, actions: Sequence[Action]) -> list[ConfigFileTarget]:
    """One target per file that needs new lines, its content being the old one plus those lines."""
    targets: list[ConfigFileTarget] = []
    for path, lines in persist_lines(actions).items():
        probe = ConfigFileTarget(path=path, content="")
        current = await read_value(host, probe)
        old = current.value if current.ok and current.value is not None else ""
        present = set(old.splitlines())
        missing = [line for line in lines if line not in present]
        if not missing:
            continue
        base = old if old else HEADER
        if base and not base.endswith("\n"):
            base += "\n"
        targets.append(ConfigFileTarget(path=path, content=base + "\n".join(missing) + "\n"))
    return targets
