"""rigaudit's tuned child profile as a fix writes it: one form to write and to read back.

On a host run by tuned a fix writes ``/etc/tuned/rigaudit-performance/tuned.conf`` (``[main] include=`` the active
profile, then the options it sets) and selects it. The write is a :class:`CommandAction` whose description carries
the whole file; the plan reads it back so that every fix that writes the profile writes it once, with all their
options (:mod:`rigaudit.orchestrator.plan.profiles`).
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import Action, CommandAction

TUNED_OVERRIDE = "rigaudit-performance"
PROFILE_DIR = f"/etc/tuned/{TUNED_OVERRIDE}"
PROFILE_CONF = f"{PROFILE_DIR}/tuned.conf"
_FORM = rf"write {re.escape(PROFILE_CONF)}: '\[main\]' 'include=([^']+)' (.+) \(the rest of '[^']+' stays as it is\)"


class ProfileWrite(Record):
    """The child profile a write leaves: the profile it includes and its sections' options."""

    base: str
    settings: dict[str, dict[str, str]]


def write_action(base: str, settings: dict[str, dict[str, str]]) -> CommandAction:
    """The write of the whole child profile: ``[main] include=base``, then each section with its options."""
    body = " ".join(
        " ".join((f"'[{section}]'", *(f"'{option}={value}'" for option, value in options.items())))
        for section, options in settings.items()
    )
    return CommandAction(
        description=f"write {PROFILE_CONF}: '[main]' 'include={base}' {body} (the rest of '{base}' stays as it is)"
    )


def read_write(action: Action) -> ProfileWrite | None:
    """The profile ``action`` writes, or None where it is not a write of rigaudit's child profile."""
    if not isinstance(action, CommandAction) or action.argv:
        return None
    match = re.fullmatch(_FORM, action.description)
    if match is None:
        return None
    settings: dict[str, dict[str, str]] = {}
    options: dict[str, str] | None = None
    for token in re.findall(r"'([^']*)'", match.group(2)):
        if token.startswith("[") and token.endswith("]"):
            options = settings.setdefault(token[1:-1], {})
        elif options is not None and "=" in token:
            option, _, value = token.partition("=")
            options[option] = value
        else:
            return None
    return ProfileWrite(match.group(1), settings)
