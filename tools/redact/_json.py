"""JSON values (transcript events, audit results, model requests), secrets redacted where they are.

* a string is text; a list of strings is a command line (``["--api-key", "X"]``);
* the value of a secret-named key is a secret (``api_key``, ``Authorization``, ``password``), and so is
  the ``value`` of an entry whose ``name`` is one (``{"name": "HF_TOKEN", "value": ...}``);
* ``data_b64`` is decoded and redacted as the raw bytes of the file it holds (the nearest
  ``target`` or ``path`` above it names the file), then encoded again;
* ``stdout``/``stderr`` beside an ``argv`` (or ``args``) are that command's output;
* ids (``id``, ``tool_call_id``) are kept as they are: a model's tool-call ids look random.

Unchanged parts are returned as the same objects, not copies.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from rigaudit.tools.bounded import loads
from rigaudit.tools.redact._blocks import redact_argv, redact_bytes, redact_output
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally
from rigaudit.tools.redact._text import redact_text, secret_value

ID_KEYS = frozenset({"id", "tool_call_id", "call_id"})
_OUTPUT_KEYS = frozenset({"stdout", "stderr"})
_VALUE_KEYS = frozenset({"value", "Value"})


def _data(encoded: str, path: str, tally: Tally | None) -> str:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return redact_text(encoded, tally)
    redacted = redact_bytes(data, path, tally)
    return encoded if redacted is data else base64.b64encode(redacted).decode("ascii")


def _argv_of(value: dict[str, Any]) -> list[str] | None:
    for key in ("argv", "args"):
        items = value.get(key)
        if isinstance(items, list) and items and all(isinstance(i, str) for i in items):
            return items
    return None


def _dict(value: dict[str, Any], path: str, tally: Tally | None) -> dict[str, Any]:
    for key in ("target", "path"):
        if isinstance(value.get(key), str) and str(value[key]).startswith("/"):
            path = str(value[key])
    argv = _argv_of(value)
    named = value.get("name") or value.get("key") or value.get("Name")
    secret_entry = isinstance(named, str) and secret_value(named, "x")
    """``{"name": "OPENAI_API_KEY", "value": "..."}`` (Kubernetes env, docker and compose entries)."""
    out: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        new: Any
        if not isinstance(key, str) or (key in ID_KEYS and isinstance(item, str)):
            new = item
        elif isinstance(item, str) and key == "data_b64":
            new = _data(item, path, tally)
        elif isinstance(item, str) and (secret_value(key, item) or (secret_entry and key in _VALUE_KEYS and item)):
            if tally is not None:
                tally.add("credential")
            new = REDACTED
        elif isinstance(item, str) and key in _OUTPUT_KEYS and argv is not None:
            new = redact_output(argv, item, tally)
        else:
            new = redact_json(item, tally, path=path)
        changed = changed or new is not item
        out[key] = new
    return out if changed else value


def redact_json(value: Any, tally: Tally | None = None, *, path: str = "") -> Any:
    """A copy of a JSON value with secrets redacted (``path``: the file a ``data_b64`` below holds)."""
    if isinstance(value, str):
        return redact_text(value, tally)
    if isinstance(value, dict):
        return _dict(value, path, tally)
    if isinstance(value, list):
        if value and all(isinstance(i, str) for i in value):
            words = redact_argv(value, tally)
            return value if words == value else words
        items = [redact_json(item, tally, path=path) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def redact_json_text(text: str, tally: Tally | None = None, *, indent: int | None = 2) -> str:
    """A JSON document's text, redacted as :func:`redact_json` (as it was when nothing changed; text when not JSON)."""
    try:
        value = loads(text)
    except ValueError:
        return redact_text(text, tally)
    redacted = redact_json(value, tally)
    return text if redacted is value else json.dumps(redacted, indent=indent, ensure_ascii=False)
