"""The pair of arm commands for a server under a systemd unit: a drop-in in /run holds the change.

The fix arm writes ``/run/systemd/system/UNIT.d/50-rigaudit-ab.conf`` with the change's ``[Service]`` lines
(``UnsetEnvironment=CUDA_LAUNCH_BLOCKING``, ``LimitNOFILE=1048576``), reloads systemd and restarts the unit; the
base arm removes that drop-in, reloads and restarts. Nothing under /etc or /usr changes, and /run is volatile, so
a reboot also brings the unit back as it was. After the restart the fix arm checks that the unit's main process
runs with the change (``/proc/PID/environ``, ``/proc/PID/limits``): a variable the unit's own command sets, or a
limit a later drop-in overrides, then stops the session instead of measuring the base twice.

The commands are shell text (``/bin/sh -c``), every word quoted with :func:`shlex.quote`; ``root``, ``systemctl``
and ``proc`` are parameters so that tests run them against a temporary folder and a fake ``systemctl``.
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
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class UnitChange(Record):
    """What the fix arm changes in the service ``unit``: variables to unset, an open-file limit to set."""

    unit: str
    unset: tuple[str, ...] = ()
    nofile: int | None = None

    def __post_init__(self) -> None:
        if not UNIT.match(self.unit):
            raise ValueError(f"{self.unit!r} is not the name of a service unit")
        bad = next((name for name in self.unset if not VARIABLE.match(name)), None)
        if bad is not None or not (self.unset or self.nofile):
            raise ValueError(f"not a change rigaudit writes in a drop-in: {bad!r}")

    def lines(self) -> tuple[str, ...]:
        """The drop-in's ``[Service]`` assignments."""
        unset = (f"UnsetEnvironment={' '.join(self.unset)}",) if self.unset else ()
        return unset + ((f"LimitNOFILE={self.nofile}",) if self.nofile else ())


def dropin_path(unit: str, root: str = RUN_UNITS) -> str:
    return f"{root.rstrip('/')}/{unit}.d/{DROPIN}"


def dropin_text(change: UnitChange) -> str:
    return "\n".join(("[Service]", *change.lines())) + "\n"


def _join(*commands: Sequence[str]) -> str:
    return " && ".join(shlex.join(c) for c in commands)


def _verify(change: UnitChange, systemctl: str, proc: str) -> str:
    """Shell text that fails, saying why, unless the unit's main process runs with the change: a variable its own
    command sets, or a limit a later drop-in overrides, would otherwise make the fix arm the same as the base."""
    main = f'{shlex.quote(proc.rstrip("/"))}/"$pid"'
    checks = [f"pid=$({shlex.join((systemctl, 'show', '--property=MainPID', '--value', change.unit))})"]
    checks.append(f"test -r {main}/environ")
    if change.unset:
        pattern = shlex.quote(f"^({'|'.join(change.unset)})=")
        checks.append(f"! tr '\\0' '\\n' < {main}/environ | grep -qE {pattern}")
    if change.nofile:
        checks.append(f"grep -qE {shlex.quote(f'^Max open files +{change.nofile} ')} {main}/limits")
    said = shlex.quote(f"{change.unit}: its main process does not run with the change ({'; '.join(change.lines())})")
    return f"{{ {' && '.join(checks)} || {{ echo {said} >&2; exit 1; }}; }}"


def unit_arms(
    change: UnitChange, *, root: str = RUN_UNITS, systemctl: str = "systemctl", proc: str = "/proc"
) -> tuple[ArmCommand, ArmCommand]:
    """(base, fix): restart the unit without, then with, the drop-in of ``change``; the fix arm then checks that the
    unit's main process runs with it (its environment, its limits under ``proc``)."""
    path = dropin_path(change.unit, root)
    folder = path.rsplit("/", 1)[0]
    reload_restart = _join((systemctl, "daemon-reload"), (systemctl, "restart", change.unit))
    remove = f"rm -f {shlex.quote(path)} && {{ rmdir {shlex.quote(folder)} 2>/dev/null || true; }}"
    write = f"mkdir -p {shlex.quote(folder)} && printf '%s\\n' {shlex.join(('[Service]', *change.lines()))} > {shlex.quote(path)}"
    return (
        ArmCommand("base", f"{remove} && {reload_restart}"),
        ArmCommand("fix", f"{write} && {reload_restart} && {_verify(change, systemctl, proc)}"),
    )
