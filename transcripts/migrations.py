"""Migrations: older transcripts are upgraded line by line to the current version when read.

Each migration takes one event of version N (a JSON object) to version N+1. They are append-only:
a new format version adds a function here and never edits an older one.

Version 0 (the prototype's format) named an event's kind ``kind`` and its time ``ts``, called the
finding event ``finding_reported``, and recorded a file read as UTF-8 text (``{"text": ...}``)
instead of base64 bytes.

Version 1 named areas since renamed (``kernel_params`` and ``kernel_version`` are ``kernel``, ``cuda_memory``
is ``cuda``, ``nccl_p2p`` is ``p2p`` and ``nccl``): version 2 names them as today, a finding's by its check.

Version 3 may record the reads of a sealed snapshot by reference (a :class:`SnapshotReferenced` event, then tool
calls whose result is ``{"digest": ...}``; :mod:`rigaudit.transcripts.references`). Every version-2 event means the
same in version 3: its migration changes nothing (a reader older than version 3 refuses a version-3 file instead of
taking its references for empty results).

Version 4 records the reads of a sealed snapshot an area at a time (a :class:`SnapshotReads` event: each read's
operation and digest), and an audit's result may refer to the findings and the plan recorded before it instead of
holding them again (``"recorded": {"findings": N, "plan": true}`` beside the result: :mod:`rigaudit.transcripts.recorded`).
Every version-3 event means the same in version 4: its migration changes nothing (a reader older than version 4
refuses the file instead of reading such a result as one without findings).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from rigaudit.tools.schema.finding import RENAMED_AREAS, current_area
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


def _v1_to_v2(event: JsonObject) -> JsonObject:
    """Areas by today's names. A progress event of a split area (``nccl_p2p``) goes to the first area holding its
    checks (``p2p``); findings go each to their own; the audit result's runs are split by the model itself."""
    out = dict(event)
    area = out.get("area")
    if isinstance(area, str) and area in RENAMED_AREAS:
        out["area"] = current_area(area)
    if out.get("type") == "llm_exchange" and out.get("agent") in RENAMED_AREAS:
        out["agent"] = current_area(str(out["agent"]))
    options = out.get("options")
    if out.get("type") == "session_started" and isinstance(options, dict) and isinstance(options.get("areas"), list):
        areas = [now for a in options["areas"] for now in RENAMED_AREAS.get(a, (a,)) if isinstance(a, str)]
        out["options"] = {**options, "areas": list(dict.fromkeys(areas))}
    finding = out.get("finding")
    if isinstance(finding, dict) and finding.get("area") in RENAMED_AREAS:
        out["finding"] = {**finding, "area": current_area(str(finding["area"]), str(finding.get("check", "")))}
    return out


def _v2_to_v3(event: JsonObject) -> JsonObject:
    """Nothing to change: version 3 only adds reads recorded by reference."""
    return event


def _v3_to_v4(event: JsonObject) -> JsonObject:
    """Nothing to change: version 4 only adds reads an area at a time and results that refer to what was recorded."""
    return event


MIGRATIONS: dict[int, EventMigration] = {0: _v0_to_v1, 1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}
"""``MIGRATIONS[n]`` upgrades an event from version ``n`` to ``n + 1``."""

OLDEST_SUPPORTED = min(MIGRATIONS)
UNCHANGED_SINCE = 2
"""Events of this version and later read as the current version's, unmigrated (the reader's fast path)."""


def migration_chain(version: int) -> list[EventMigration]:
    """The functions that take an event of ``version`` to the current version, in order."""
    return [MIGRATIONS[v] for v in range(version, CURRENT_VERSION)]


def migrate_event(event: JsonObject, version: int) -> JsonObject:
    for step in migration_chain(version):
        event = step(event)
    return event
