"""The pair of arm commands for a server under a systemd unit: a drop-in in /run holds the change.

The fix arm writes ``/run/systemd/system/UNIT.d/50-rigaudit-ab.conf`` with the change's ``[Service]`` lines
(``UnsetEnvironment=CUDA_LAUNCH_BLOCKING``, ``LimitNOFILE=1048576``), reloads systemd and restarts the unit; the
base arm removes that drop-in, reloads and restarts. Nothing under /etc or /usr changes, and /run is volatile, so a
reboot also brings the unit back as it was. The commands are shell text (``/bin/sh -c``), every word quoted with
:func:`shlex.quote`; ``root`` and ``systemctl`` are parameters so that tests run them against a temporary folder
and a fake ``systemctl``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from rigaudit.tools.bench.restart import ArmCommand
from rigaudit.tools.core.record import Record

RUN_UNITS = "/run/systemd/system"
"""Where runtime (volatile) units and drop-ins live."""
DROPIN = "50-rigaudit-ab.conf"
UNIT = re.compile(r"^[A-Za-z0-9:_.\\@-]{1,250}\.service$")
LINE = re.compile(r"^[A-Z][A-Za-z]+=[A-Za-z0-9_.:= /,+-]{0,1000}$")
"""A ``[Service]`` assignment whose value holds no quote, newline, ``$`` or ``%`` (systemd's specifiers)."""


class UnitChange(Record):
    """The ``[Service]`` lines that make the fix arm of a server run by ``unit``."""

    unit: str
    lines: tuple[str, ...]

    def __post_init__(self) -> None:
        if not UNIT.match(self.unit):
            raise ValueError(f"{self.unit!r} is not the name of a service unit")
        bad = next((line for line in self.lines if not LINE.match(line)), None)
        if not self.lines or bad is not None:
            raise ValueError(f"not a drop-in line rigaudit writes: {bad!r}")


def dropin_path(unit: str, root: str = RUN_UNITS) -> str:
    return f"{root.rstrip('/')}/{unit}.d/{DROPIN}"


def dropin_text(change: UnitChange) -> str:
    return "\n".join(("[Service]", *change.lines)) + "\n"


def _join(*commands: Sequence[str]) -> str:
    return " && ".join(shlex.join(c) for c in commands)


def unit_arms(change: UnitChange, *, root: str = RUN_UNITS, systemctl: str = "systemctl") -> tuple[ArmCommand, ArmCommand]:
    """(base, fix): restart the unit without, then with, the drop-in of ``change``."""
    path = dropin_path(change.unit, root)
    folder = path.rsplit("/", 1)[0]
    reload_restart = ((systemctl, "daemon-reload"), (systemctl, "restart", change.unit))
    remove = f"rm -f {shlex.quote(path)} && {{ rmdir {shlex.quote(folder)} 2>/dev/null || true; }}"
    write = f"mkdir -p {shlex.quote(folder)} && printf '%s\\n' {shlex.join(('[Service]', *change.lines))} > {shlex.quote(path)}"
    return (
        ArmCommand("base", f"{remove} && {_join(*reload_restart)}"),
        ArmCommand("fix", f"{write} && {_join(*reload_restart)}"),
    )
