"""JSON values (transcript events, audit results, model requests), secrets redacted where they are.

* a string is text; a list of strings is a command line (``["--api-key", "X"]``);
* the value of a secret-named key is a secret (``api_key``, ``Authorization``, ``password``), and so is
  the ``value`` of an entry whose ``name`` is one (``{"name": "HF_TOKEN", "value": ...}``);
* ``data_b64`` is decoded and redacted as the raw bytes of the file it holds (the nearest
  ``target`` or ``path`` above it names the file), then encoded again;
* ``stdout``/``stderr`` beside an ``argv`` (or ``args``) are that command's output;
* ids (``id``, ``tool_call_id``) are kept as they are: a model's tool-call ids look random.

With ``ids`` (what goes to a model, and transcripts), the identifiers every string holds become digests too
(:mod:`._ids`), told where they are by the same context: a ``data_b64`` file's path, the ``argv``/``args`` above
an output (a :class:`ToolCall`'s ``result`` sits below them), an NVML call's function (``"op": "nvml"``).

Unchanged parts are returned as the same objects, not copies.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from typing import Any

from rigaudit.tools.core.record import Record, replace
from rigaudit.tools.files.bounded import loads
from rigaudit.tools.pci import mask_vpd, zero_dsn
from rigaudit.tools.redact import _known
from rigaudit.tools.redact._blocks import PROC_CMDLINE, PROC_ENVIRON, redact_argv, redact_bytes, redact_output
from rigaudit.tools.redact._ids import digest_ids, digest_nvml, learn_config
from rigaudit.tools.redact._memo import TextMemo
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally
from rigaudit.tools.redact._text import redact_text
from rigaudit.tools.redact._values import secret_value

ID_KEYS = frozenset({"id", "tool_call_id", "call_id"})
_OUTPUT_KEYS = frozenset({"stdout", "stderr"})
_VALUE_KEYS = frozenset({"value", "Value"})
_SCALARS = frozenset({int, float, bool})


class _Context(Record):
    path: str = ""
    """The file a ``data_b64`` below holds."""
    ids: bool = False
    argv: tuple[str, ...] = ()
    """The command whose output a ``stdout``/``stderr`` below is (for identifiers)."""
    nvml: str = ""
    """The NVML function whose result is below."""


def _text_ids(text: str, ctx: _Context, tally: Tally | None, *, output: bool = False) -> str:
    """A string's identifiers as digests (with ``ids``); ``output``: a command's output, which ``ctx.argv`` printed."""
    if not ctx.ids:
        return text
    return digest_ids(text, argv=ctx.argv, content=True, tally=tally) if output else digest_ids(text, tally=tally)


def _evidence_raw(text: str, ctx: _Context, tally: Tally | None) -> str:
    if ctx.nvml:
        return (
            str(digest_nvml(ctx.nvml, text.strip().strip('"'), tally)) if "Serial" in ctx.nvml else digest_ids(text, tally=tally)
        )
    return digest_ids(text, path=ctx.path, argv=ctx.argv, content=True, tally=tally)


def _binary_serials(path: str, data: bytes, tally: Tally | None) -> bytes:
    """PCI configuration space's Device Serial Number, and VPD's ``SN``, zeroed (as share bundles zero them)."""
    if posixpath.basename(path) == "vpd":
        out, masked = mask_vpd(data)
    else:
        learn_config(data)  # its serial printed elsewhere (setpci, lspci) is then the same digest
        zeroed = zero_dsn(data)
        out, masked = zeroed if zeroed is not None else (data, False)
    if masked and tally is not None:
        tally.add("identifier", int(masked))
    return out if masked else data


def _data(encoded: str, ctx: _Context, tally: Tally | None) -> str:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return redact_text(encoded, tally)
    redacted = redact_bytes(data, ctx.path, tally)
    if ctx.ids and "/sys/" in f"/{ctx.path}" and posixpath.basename(ctx.path) in ("config", "vpd"):
        redacted = _binary_serials(ctx.path, redacted, tally)
    elif ctx.ids and (b"\x00" not in redacted[:512] or PROC_ENVIRON.match(ctx.path) or PROC_CMDLINE.match(ctx.path)):
        text = redacted.decode("utf-8", "surrogateescape")
        digested = digest_ids(text, path=ctx.path, content=True, tally=tally)
        if digested is not text:
            redacted = digested.encode("utf-8", "surrogateescape")
    return encoded if redacted is data else base64.b64encode(redacted).decode("ascii")


def _argv_of(value: dict[str, Any]) -> list[str] | None:
    for key in ("argv", "args"):
        items = value.get(key)
        if isinstance(items, list) and items and all(isinstance(i, str) for i in items):
            return items
    return None


def _dict(value: dict[str, Any], ctx: _Context, tally: Tally | None) -> dict[str, Any]:
    for key in ("target", "path"):
        place = value.get(key)
        if isinstance(place, str) and place.startswith("/") and place != ctx.path:
            ctx = replace(ctx, path=place)
    argv = _argv_of(value)
    if argv is not None and ctx.ids:
        ctx = replace(ctx, argv=tuple(argv))
    if ctx.ids and value.get("op") == "nvml" and isinstance(value.get("target"), str):
        ctx = replace(ctx, nvml=str(value["target"]))
    evidence = ctx.ids and isinstance(value.get("raw"), str) and isinstance(value.get("source"), str)
    if evidence:  # an Evidence item (an audit result's): its raw text is what its source printed
        kind, source = value.get("kind"), str(value["source"])
        if kind == "file":
            ctx = replace(ctx, path=source)
        elif kind == "command":
            ctx = replace(ctx, argv=tuple(source.split()))
        elif kind == "nvml":
            ctx = replace(ctx, nvml=str(value.get("ref", "")))
    named = value.get("name") or value.get("key") or value.get("Name")
    secret_entry = isinstance(named, str) and secret_value(named, "x")
    """``{"name": "OPENAI_API_KEY", "value": "..."}`` (Kubernetes env, docker and compose entries)."""
    out: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        new: Any
        if item is None or type(item) in _SCALARS:  # nothing to redact in a number or a boolean
            out[key] = item
            continue
        if not isinstance(key, str) or (key in ID_KEYS and isinstance(item, str)):
            new = item
        elif isinstance(item, str) and key == "data_b64":
            new = _data(item, ctx, tally)
        elif isinstance(item, str) and (secret_value(key, item) or (secret_entry and key in _VALUE_KEYS and item)):
            if tally is not None:
                tally.add("credential")
            new = REDACTED
        elif isinstance(item, str) and key in _OUTPUT_KEYS and (argv is not None or ctx.argv):
            said = redact_output(argv, item, tally) if argv is not None else redact_text(item, tally)
            new = _text_ids(said, ctx, tally, output=True)
        elif evidence and key == "raw":
            new = _evidence_raw(redact_text(str(item), tally), ctx, tally)
        elif ctx.nvml and key == "result" and not isinstance(item, dict):
            new = digest_nvml(ctx.nvml, _walk(item, tally, ctx), tally)
        else:
            new = _walk(item, tally, ctx)
        changed = changed or new is not item
        out[key] = new
    return out if changed else value


_STRINGS = TextMemo(most_chars=2_000_000)
"""Short strings walked before (a path, a ref, a name repeated across events), by what their redaction depends on:
the string, whether identifiers are digested, and the identifiers known (a walk that learned one is not kept)."""


def _string(value: str, tally: Tally | None, ctx: _Context) -> str:
    if len(value) > 512:  # long texts: their own memos (tools/redact/_memo.py)
        return _text_ids(redact_text(value, tally), ctx, tally)
    learned = _known.generation()

    def walk(counted: Tally) -> str:
        return _text_ids(redact_text(value, counted), ctx, counted)

    out = _STRINGS.run((value, ctx.ids, learned), walk, tally, keep=lambda: _known.generation() == learned)
    return value if out == value else out


def _walk(value: Any, tally: Tally | None, ctx: _Context) -> Any:
    if isinstance(value, str):
        return _string(value, tally, ctx)
    if isinstance(value, dict):
        return _dict(value, ctx, tally)
    if isinstance(value, list):
        if value and all(isinstance(i, str) for i in value):
            words = redact_argv(value, tally)
            if ctx.ids:
                words = [digest_ids(w, tally=tally) for w in words]
            return value if words == value else words
        items = [item if item is None or type(item) in _SCALARS else _walk(item, tally, ctx) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def redact_json(value: Any, tally: Tally | None = None, *, path: str = "", ids: bool = False) -> Any:
    """A copy of a JSON value with secrets redacted (``path``: the file a ``data_b64`` below holds); with ``ids``,
    every identifier as a digest too (what goes to a model, and transcripts)."""
    return _walk(value, tally, _Context(path=path, ids=ids))


def redact_json_text(text: str, tally: Tally | None = None, *, indent: int | None = 2) -> str:
    """A JSON document's text, redacted as :func:`redact_json` (as it was when nothing changed; text when not JSON)."""
    try:
        value = loads(text)
    except ValueError:
        return redact_text(text, tally)
    redacted = redact_json(value, tally)
    return text if redacted is value else json.dumps(redacted, indent=indent, ensure_ascii=False)
