"""Per-process facts from procfs: resource limits (``/proc/PID/limits``) and ``/proc/PID/status`` fields."""

from __future__ import annotations

import re

from rigaudit.agents.facts.numbers import count
from rigaudit.tools.core.record import Record

_LIMIT_LINE = r"(?m)^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)"


class Limit(Record):
    """One resource limit; ``None`` means unlimited."""

    soft: int | None
    hard: int | None

    @staticmethod
    def word(value: int | None) -> str:
        return "unlimited" if value is None else str(value)

    def __str__(self) -> str:
        return f"soft {self.word(self.soft)}, hard {self.word(self.hard)}"


def _value(text: str) -> int | None:
    if text.lower() in ("unlimited", "infinity"):
        return None
    if (value := count(text)) is None:
        raise ValueError(text)
    return value


def parse_limits(text: str | None) -> dict[str, Limit]:
    """``Max open files  1024  524288  files`` -> {"Max open files": Limit(1024, 524288)}."""
    out: dict[str, Limit] = {}
    for match in re.finditer(_LIMIT_LINE, text or ""):
        try:
            out[match.group(1)] = Limit(_value(match.group(2)), _value(match.group(3)))
        except ValueError:
            continue
    return out


def parse_status(text: str | None) -> dict[str, str]:
    """``Key:\\tvalue`` lines of /proc/PID/status."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def status_uid(text: str | None) -> int | None:
    """The real user id (first field of ``Uid:``)."""
    fields = parse_status(text).get("Uid", "").split()
    return count(fields[0]) if fields else None


def status_ppid(text: str | None) -> int | None:
    """The parent's pid (``PPid:``)."""
    return count(parse_status(text).get("PPid"))


def status_threads(text: str | None) -> int | None:
    return count(parse_status(text).get("Threads"))
