"""Times read from files rigaudit did not just write (a transcript's ``t``, a result's ``finished_at``, a file's
mtime), shown as dates: a value no calendar holds (NaN, 1e300, before year 1) is ``None``, never an exception."""

from __future__ import annotations

from datetime import datetime, timezone

UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
LOCAL_FORMAT = "%Y-%m-%d %H:%M:%S"


def _datetime(t: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(t, tz=timezone.utc)
    except (OverflowError, OSError, ValueError, TypeError):
        return None


def utc_stamp(t: float) -> str | None:
    """``2026-12-01T19:11:09Z`` for Unix time ``t``; ``None`` when no date is ``t``."""
    moment = _datetime(t)
    return moment.strftime(UTC_FORMAT) if moment is not None else None


def local_stamp(t: float) -> str | None:
    """``2026-12-01 20:11:09`` (local time) for Unix time ``t``; ``None`` when no date is ``t``."""
    moment = _datetime(t)
    if moment is None:
        return None
    try:
        return moment.astimezone().strftime(LOCAL_FORMAT)
    except (OverflowError, OSError, ValueError):
        return None


__all__ = ["LOCAL_FORMAT", "UTC_FORMAT", "local_stamp", "utc_stamp"]
