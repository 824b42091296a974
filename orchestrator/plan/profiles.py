"""Fixes that write rigaudit's tuned child profile: one file, so one write with every option they set.

Each such fix writes the whole ``tuned.conf`` with its own option; run one after another, the last would undo the
others. Every fix that writes the profile over the same base gets one fix instead: the profile with all their
options (the most severe fix's value where two set one option differently), the checks of all in its verify, the
most severe fix's revert. Their actions are then identical, so the plan gives them one step that also resolves the
others' checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.schema.finding import Finding, Fix
from rigaudit.tools.schema.tuned_profile import TUNED_OVERRIDE, ProfileWrite, read_write, write_action


def _write(fix: Fix | None) -> ProfileWrite | None:
    return next((w for a in fix.actions if (w := read_write(a)) is not None), None) if fix is not None else None


def _merged(fixes: Sequence[Fix], base: str) -> dict[str, object]:
    """What every one of ``fixes`` (most severe first, each writing the child profile over ``base``) takes from
    their merge: its summary, actions, verify and revert."""
    settings: dict[str, dict[str, str]] = {}
    for fix in fixes:
        for section, options in (_write(fix) or ProfileWrite(base, {})).settings.items():
            for option, value in options.items():
                settings.setdefault(section, {}).setdefault(option, value)
    lines = "; ".join(
        f"[{section}] " + ", ".join(f"{o}={v}" for o, v in options.items()) for section, options in settings.items()
    )
    first = fixes[0]
    actions = tuple(write_action(base, settings) if read_write(a) is not None else a for a in first.actions)
    verify = "; ".join(dict.fromkeys(part for fix in fixes for part in fix.verify.split("; ") if part))
    summary = (
        f"Set {lines} in one tuned profile ({TUNED_OVERRIDE}, including '{base}'): tuned holds this host's settings "
        "and applies its profile again on every restart"
    )
    return {"summary": summary, "actions": actions, "verify": verify, "revert": first.revert}


def merge_profiles(problems: Sequence[Finding]) -> list[Finding]:
    """``problems`` (most severe first), each fix that writes the child profile replaced by the one that writes
    every option of them all."""
    groups: dict[str, list[int]] = {}
    for i, finding in enumerate(problems):
        if (write := _write(finding.fix)) is not None:
            groups.setdefault(write.base, []).append(i)
    out = list(problems)
    for base, members in groups.items():
        if len(members) < 2:
            continue
        fixes = [fix for i in members if (fix := problems[i].fix) is not None]
        update = _merged(fixes, base)
        for i, fix in zip(members, fixes, strict=True):
            out[i] = problems[i].model_copy(update={"fix": fix.model_copy(update=update)})
    return out
