"""Migrations: older transcripts are upgraded line by line to the current version when read.

Each migration takes one event of version N (a JSON object) to version N+1. They are append-only:
a new format version adds a function here and never edits an older one.

Version 0 (the prototype's format) named an event's kind ``kind`` and its time ``ts``, called the
finding event ``finding_reported``, and recorded a file read as UTF-8 text (``{"text": ...}``)
instead of base64 bytes.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from rigaudit.transcripts.format import CURRENT_VERSION

JsonObject = dict[str, Any]
EventMigration = Callable[[JsonObject], JsonObject]

_V0_RENAMED_TYPES = {"finding_reported": "finding"}


def _v0_to_v1(event: JsonObject) -> JsonObject:
    out = dict(event)
    if "kind" in out and "type" not in out:
        out["type"] = out.pop("kind")
    if "ts" in out and "t" not in out:
        out["t"] = out.pop("ts")
    out["type"] = _V0_RENAMED_TYPES.get(out.get("type"), out.get("type"))  # type: ignore[arg-type]
    result = out.get("result")
    if out.get("type") == "tool_call" and out.get("op") == "read" and isinstance(result, dict) and "text" in result:
        text = result["text"]
        out["result"] = {"data_b64": base64.b64encode(str(text).encode("utf-8")).decode("ascii")}
    return out


MIGRATIONS: dict[int, EventMigration] = {0: _v0_to_v1}
"""``MIGRATIONS[n]`` upgrades an event from version ``n`` to ``n + 1``."""

OLDEST_SUPPORTED = min(MIGRATIONS)


def migration_chain(version: int) -> list[EventMigration]:
    """The functions that take an event of ``version`` to the current version, in order."""
    return [MIGRATIONS[v] for v in range(version, CURRENT_VERSION)]


def migrate_event(event: JsonObject, version: int) -> JsonObject:
    for step in migration_chain(version):
        event = step(event)
    return event
