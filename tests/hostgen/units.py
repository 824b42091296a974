"""A systemd unit that failed at boot, as ``systemctl`` and ``journalctl`` show it on the host."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.hostgen.build import Built

_JOURNAL_DAY = "Nov 30 09:58"


def unit_failed(built: Built, unit: str, description: str, lines: list[tuple[str, str]], *, state: str = "failed") -> None:
    """``unit`` failed at boot: ``systemctl is-active`` says ``state``, ``journalctl -u UNIT -n 50`` and ``systemctl
    status`` show ``lines`` (program[pid], message) followed by systemd's own account of the failure."""
    host = built.spec.hostname
    journal = [f"{_JOURNAL_DAY}:11 {host} systemd[1]: Starting {description}..."]
    journal += [f"{_JOURNAL_DAY}:12 {host} {program}: {message}" for program, message in lines]
    journal += [
        f"{_JOURNAL_DAY}:12 {host} systemd[1]: {unit}.service: Control process exited, code=exited, status=1/FAILURE",
        f"{_JOURNAL_DAY}:12 {host} systemd[1]: {unit}.service: Failed with result 'exit-code'.",
        f"{_JOURNAL_DAY}:12 {host} systemd[1]: Failed to start {description}.",
    ]
    tree = built.tree
    tree.command(("systemctl", "is-active", unit), state + "\n", exit_code=3)
    tree.command(("journalctl", "-u", unit, "-n", "50", "--no-pager"), "\n".join(journal) + "\n")
    status = [
        f"× {unit}.service - {description}",
        f"     Loaded: loaded (/usr/lib/systemd/system/{unit}.service; enabled; preset: enabled)",
        "     Active: failed (Result: exit-code) since Sun 2026-11-30 09:58:12 UTC; 2 days ago",
        "",
        *journal[-5:],
    ]
    tree.command(("systemctl", "status", unit, "--no-pager"), "\n".join(status) + "\n", exit_code=3)


SHOW_PROPERTIES = "--property=Id,LoadState,FragmentPath"
"""What ``systemctl show`` is asked of a server's unit (rigaudit.orchestrator.bench.step_arms)."""


def unit_shown(built: Built, unit: str, fragment: str | None = None) -> None:
    """``systemctl show`` of a loaded ``unit`` whose unit file is ``fragment`` (default: one in /etc/systemd/system)."""
    fragment = fragment or f"/etc/systemd/system/{unit}"
    text = f"Id={unit}\nLoadState=loaded\nFragmentPath={fragment}\n"
    built.tree.command(("systemctl", "show", SHOW_PROPERTIES, unit), text)
