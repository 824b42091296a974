"""The transcript format's name and version, and the header line that opens every file."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

FORMAT_PREFIX = "rigaudit.transcript/"
CURRENT_VERSION = 4
CURRENT_FORMAT = f"{FORMAT_PREFIX}{CURRENT_VERSION}"
HEADER_KEY = "transcript"
"""The first line is ``{"transcript": "rigaudit.transcript/4", "created_at": ..., ...}``."""

DUMPS: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode
"""A line's JSON, as ``json.dumps`` with these separators writes it (its encoder made once, not for every line); a
value's text is the same wherever it sits, so a line may be put together from the texts of its parts."""

_VERSION = re.compile(r"rigaudit\.transcript/(\d+)")


def parse_version(value: object) -> int | None:
    """``"rigaudit.transcript/1"`` -> 1; anything else -> ``None``."""
    if not isinstance(value, str):
        return None
    match = _VERSION.fullmatch(value)
    return int(match.group(1)) if match else None


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_header(**extra: Any) -> dict[str, Any]:
    """The header of a new transcript (``extra`` adds fields such as the writer's version)."""
    return {HEADER_KEY: CURRENT_FORMAT, "created_at": utc_now(), **extra}
