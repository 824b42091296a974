"""Whether a brain's finding is borne out by what the audit recorded: the values it says it observed are in the
evidence it cites.

The values of a claim are the words of its ``observed`` that carry a value: a quoted text, a number, a
``key=value``, a path or a dotted name. Each must appear in the recorded text of an evidence the finding cites
(what was read or run, as the probe recorded it, or as a model was shown it: redacted, its identifiers
digests), or name that evidence (the path of the file read, the command run); at least one must be in the
recorded text itself. A claim whose whole ``observed`` is in the recorded text stands too. Anything else, a
claim stating no value included, is not borne out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rigaudit.tools.redact import digest_ids, redact_text
from rigaudit.tools.schema.evidence import Evidence

_QUOTED = re.compile(r"\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)|`([^`]+)`|“([^”]+)”")
_SPLIT = re.compile(r"[\s,;()\[\]{}<>]+")
_EDGES = ".,:;!?"
_MARKS = re.compile(r"[0-9=/_@]|\w[.:]\w")
"""What makes a word a value rather than prose: a digit, ``=``, a path, a dotted or colon name."""


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def claimed_values(observed: str) -> list[str]:
    """The values ``observed`` states, in order, each once (lower case)."""
    values: list[str] = []
    rest = observed
    for match in _QUOTED.finditer(observed):
        values.append(next(g for g in match.groups() if g is not None))
        rest = rest.replace(match.group(0), " ")
    for piece in _SPLIT.split(rest):
        word = piece.strip(_EDGES)
        if word and _MARKS.search(word) and any(c.isalnum() for c in word):
            values.append(word)
    out: list[str] = []
    for value in (_normal(v) for v in values):
        if value and value not in out:
            out.append(value)
    return out


def _in(value: str, text: str) -> bool:
    """``value`` in ``text`` as a whole (not the ``1`` of ``10``, not the ``pt`` of ``ptr``)."""
    return re.search(rf"(?<![a-z0-9_]){re.escape(value)}(?![a-z0-9_])", text) is not None


def _names(value: str, names: str) -> bool:
    """``value`` names a cited evidence: its path, its command, a sysctl key of its path (dots for slashes)."""
    return _in(value, names) or _in(value.replace(".", "/"), names)


def _shown(value: str, texts: str, names: str) -> bool:
    if _in(value, texts):
        return True
    key, eq, said = value.partition("=")
    return bool(eq and key.strip() and said.strip()) and _names(key.strip(), names) and _in(said.strip(), texts)


def recorded_text(evidence: Evidence) -> str:
    """What ``evidence`` recorded: its text and error as read, and its text as a model is shown it."""
    parts = [evidence.raw, evidence.error or ""]
    if evidence.raw:
        seen = redact_text(evidence.raw)
        if evidence.kind == "file":
            seen = digest_ids(seen, path=evidence.source, content=True)
        elif evidence.kind == "command":
            seen = digest_ids(seen, argv=evidence.source.split(), content=True)
        seen = digest_ids(seen, content=evidence.kind != "dir")
        parts.append(seen if seen != evidence.raw else "")
    return "\n".join(p for p in parts if p)


def unsupported(observed: str, cited: Sequence[Evidence]) -> str | None:
    """``None`` when the ``cited`` evidence bears ``observed`` out; else why not, in one line."""
    refs = [e.ref for e in cited]
    texts = _normal("\n".join(recorded_text(e) for e in cited))
    names = _normal(" ".join([*refs, *(e.source for e in cited)]))
    where = ", ".join(refs[:3]) + (f" (+{len(refs) - 3} more)" if len(refs) > 3 else "")
    said = _normal(observed)
    if said and said in texts:
        return None
    values = claimed_values(observed)
    if not values:
        return f"states no observed value that {where} could show"
    missing = [v for v in values if not _shown(v, texts, names) and not _names(v, names)]
    if missing:
        return f"observed {', '.join(repr(v[:60]) for v in missing[:3])} is not in what {where} recorded"
    if not any(_shown(v, texts, names) for v in values):
        return f"only names {where}: none of the values it states is in what was recorded there"
    return None
