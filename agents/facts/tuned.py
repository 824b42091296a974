"""TuneD: whether it runs, its active profile, and the settings that profile (with what it includes) applies.

A tunable the active profile sets is tuned's: tuned writes it again when it restarts or reloads the profile, so the
fix for it is a profile, not a direct write (``deliberate.TUNED_PROFILE``). Profiles live in ``/etc/tuned/NAME/``
(the administrator's, first) and ``/usr/lib/tuned/NAME/`` (the package's; ``profiles/NAME`` below either in tuned
2.23+), each a ``tuned.conf`` in ini form whose ``[main] include=`` names the profiles it builds on.
"""

from __future__ import annotations

import configparser

from rigaudit.agents.facts.deliberate import TUNED_PROFILE
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Fix
from rigaudit.tools.schema.tuned_profile import PROFILE_DIR, TUNED_OVERRIDE, write_action

ACTIVE_PROFILE = "/etc/tuned/active_profile"
_ROOTS = ("/etc/tuned", "/etc/tuned/profiles", "/usr/lib/tuned", "/usr/lib/tuned/profiles")
_DEPTH = 6


class TunedState(Record):
    """tuned on this host: its service state, the active profile and the settings it applies."""

    service: str | None
    """``systemctl is-active tuned``: ``active``, ``inactive``...; None when not told."""
    active: str
    """The active profile (``throughput-performance``; several, space-separated, are merged left to right)."""
    settings: dict[str, dict[str, str]]
    """Section (plugin) -> option -> value, includes applied first, the profile's own settings over them."""
    unread: tuple[str, ...]
    """Profiles named but not found or not readable."""
    refs: tuple[str, ...]

    @property
    def running(self) -> bool:
        return self.service == "active"

    def owns(self, section: str, option: str) -> str | None:
        """The value the active profile gives ``section``'s ``option`` while tuned runs, else None."""
        return self.settings.get(section, {}).get(option) if self.running else None


def _parse(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return configparser.ConfigParser(interpolation=None)
    return parser


async def _profile(
    probe: Probe, name: str, depth: int, into: dict[str, dict[str, str]], unread: list[str], refs: list[str]
) -> None:
    for root in _ROOTS:
        path = f"{root}/{name}/tuned.conf"
        text = await probe.text(path)
        if text is not None:
            refs.append(file_ref(path))
            break
    else:
        unread.append(name)
        return
    parser = _parse(text)
    if depth < _DEPTH and parser.has_option("main", "include"):
        for included in parser.get("main", "include").replace(",", " ").split():
            if "$" not in included:
                await _profile(probe, included, depth + 1, into, unread, refs)
    for section in parser.sections():
        if section != "main":
            into.setdefault(section, {}).update(dict(parser.items(section)))


async def collect_tuned(probe: Probe) -> TunedState | None:
    """tuned's state, or None where no profile was ever selected (no /etc/tuned/active_profile)."""
    active = (await probe.text(ACTIVE_PROFILE) or "").strip()
    if not active:
        return None
    argv = ("systemctl", "is-active", "tuned")
    status = await probe.run(argv)
    service = (status.stdout.strip() or None) if status.error is None else None
    settings: dict[str, dict[str, str]] = {}
    unread: list[str] = []
    refs = [file_ref(ACTIVE_PROFILE), command_ref(argv)]
    for name in active.split()[:4]:
        await _profile(probe, name, 0, settings, unread, refs)
    return TunedState(service, active, settings, tuple(unread), tuple(dict.fromkeys(refs)))


def by_tuned(
    tuned: TunedState | None, section: str, option: str, value: str, fix: Fix, *, whenever_running: bool = False
) -> tuple[Fix, str]:
    """``fix`` itself, or, where tuned's active profile sets ``[section] option``, the profile that overrides it (a
    direct write lasts only until tuned applies its profile again); with the sentence that says why.
    ``whenever_running``: a running tuned gets the profile even for an option its profile leaves alone (the host's CPU
    power settings are tuned's to hold: a unit beside it would be a second owner)."""
    owned = tuned.owns(section, option) if tuned is not None else None
    if tuned is None or (owned is None and not (whenever_running and tuned.running)):
        return fix, ""
    base = ",".join(tuned.active.split()) if TUNED_OVERRIDE not in tuned.active else "throughput-performance"
    summary = (
        f"Override {option} in a tuned profile: tuned's active profile '{tuned.active}' sets "
        f"[{section}] {option}={owned} and applies it again on every restart"
        if owned is not None
        else f"Set [{section}] {option} in a tuned profile: tuned runs with '{tuned.active}' and holds this host's "
        "settings, so the change is a profile, not a unit beside it"
    )
    profile_fix = Fix(
        kind="runtime",
        where=fix.where,
        summary=summary,
        actions=(
            write_action(base, {section: {option: value}}),
            CommandAction(description=f"tuned-adm profile {TUNED_OVERRIDE}", argv=("tuned-adm", "profile", TUNED_OVERRIDE)),
        ),
        risk="low",
        verify=f"tuned-adm active  -> {TUNED_OVERRIDE}; {fix.verify}",
        revert=f"tuned-adm profile {tuned.active}" + (f"; rm -r {PROFILE_DIR}" if TUNED_OVERRIDE not in tuned.active else ""),
        persist="tuned applies the selected profile at every boot",
    )
    note = (
        f" Deliberate ownership: TuneD is active with profile '{tuned.active}', which sets [{section}] {option}={owned}; "
        f"tuned re-applies its profile when it restarts, so the fix is a profile ({TUNED_PROFILE.source})."
        if owned is not None
        else f" TuneD is active with profile '{tuned.active}', which leaves [{section}] {option} alone: on a host run by "
        f"tuned the vendor's way is a profile that includes it and sets the option ({TUNED_PROFILE.source})."
    )
    return profile_fix, note
