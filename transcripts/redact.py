"""Secrets never reach a transcript.

The rules are the project's (:mod:`rigaudit.tools.redact`, shared with snapshots, so a transcript and a
snapshot of the same host hold the same evidence): values of names containing KEY, TOKEN, SECRET,
PASSWORD, PASSWD or CREDENTIAL in ``NAME=value``, JSON, YAML and ``--option value`` forms, and
``/proc/PID/environ`` / ``cmdline`` blocks by their structure. On top of them, for LLM exchanges
and any other text: ``Authorization: Bearer ...`` (and Basic), ``sk-...`` and ``hf_...`` looking
strings, and the string values of secret-named JSON keys (``api_key``, ``Authorization``...).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from typing import Any

from rigaudit.tools import redact as shared

REDACTED = shared.REDACTED
_TOKENS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"(?i)\b((?:Proxy-)?Authorization\s*[:=]\s*\"?(?:Bearer|Basic|Token)\s+)[^\s\"',;]+"),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(?i)\b(Bearer\s+)(?!<redacted>)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), REDACTED),
)
_SECRET_WORDS = tuple(w.lower() for w in shared.SECRET_WORDS)
_TOKEN_HINTS = ("bearer", "basic", "token", "authorization", "sk-", "hf_")
_HINTS = _SECRET_WORDS + _TOKEN_HINTS
_SECRET_WORDS_B = tuple(w.encode("ascii") for w in _SECRET_WORDS)
_TOKEN_HINTS_B = tuple(w.encode("ascii") for w in _TOKEN_HINTS)
"""The rules only ever redact near one of these words: cheap substring pre-checks (a regex is 20x slower)."""
_AUTH_KEYS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SAFE_KEYS = frozenset({"key"})
"""Keys that are never secret by themselves (a sysctl action's ``key`` is the sysctl's name)."""


def _tokens(text: str) -> str:
    for pattern, replacement in _TOKENS:
        text = pattern.sub(replacement, text)
    return text


def redact_text(text: str) -> str:
    """``text`` with secret values replaced by ``<redacted>`` (the same object when nothing changed)."""
    lowered = text.lower()
    if not any(w in lowered for w in _HINTS):
        return text
    redacted = shared.redact_text(text) if any(w in lowered for w in _SECRET_WORDS) else text
    if any(w in lowered for w in _TOKEN_HINTS):
        redacted = _tokens(redacted)
    return text if redacted == text else redacted


def redact_file(path: str, data: bytes) -> bytes:
    """A file read from the host: by its kind (binary files come back untouched)."""
    lowered = data.lower()
    redacted = shared.redact_file(path, data) if any(w in lowered for w in _SECRET_WORDS_B) else data
    if not any(w in lowered for w in _TOKEN_HINTS_B):
        return redacted
    try:
        text = redacted.decode("utf-8")
    except UnicodeDecodeError:
        return redacted
    if "\x00" in text:
        return redacted
    tokens = _tokens(text)
    return redacted if tokens == text else tokens.encode("utf-8")


@functools.lru_cache(maxsize=4096)
def secret_key(name: str) -> bool:
    """Whether a JSON key names a secret (``api_key``, ``Authorization``, ``HF_TOKEN``...)."""
    lowered = name.lower()
    return lowered not in _SAFE_KEYS and (lowered in _AUTH_KEYS or shared.is_secret_name(name))


def redact_json(value: Any) -> Any:
    """A copy of a JSON value with secrets redacted; unchanged parts are shared, not copied."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            new = REDACTED if isinstance(item, str) and item and isinstance(key, str) and secret_key(key) else redact_json(item)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list):
        items = [redact_json(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def _redact_read(path: str, result: dict[str, Any]) -> dict[str, Any]:
    encoded = result.get("data_b64")
    if not isinstance(encoded, str):
        return result
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return result
    redacted = redact_file(path, data)
    if redacted is data or redacted == data:
        return result
    return {**result, "data_b64": base64.b64encode(redacted).decode("ascii")}


def redact_event(data: dict[str, Any]) -> dict[str, Any]:
    """An event as JSON, redacted: file contents by their path, everything else as text."""
    if data.get("type") == "tool_call" and data.get("op") == "read" and isinstance(data.get("result"), dict):
        rest = redact_json({k: v for k, v in data.items() if k != "result"})
        return {**rest, "result": _redact_read(str(data.get("target", "")), data["result"])}
    redacted: dict[str, Any] = redact_json(data)
    return redacted
