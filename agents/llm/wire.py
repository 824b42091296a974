"""What real servers send back, made uniform: reasoning stripped, tool calls written as text parsed, arguments as text.

- Reasoning models put their thoughts in ``<think>...</think>`` before the answer (Qwen3, DeepSeek-R1
  without a reasoning parser) or in a separate ``reasoning_content`` field (vLLM/SGLang with one):
  neither is the answer, so the block is cut before anything is parsed.
- Models without a server-side tool parser write their tool calls in the content, in the forms their
  chat templates document: Hermes/Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
  Llama 3.x ``<|python_tag|>{"name": ..., "parameters": {...}}`` (calls separated by ``;``), a bare
  JSON object (or a list of them) that is only a call, and ``<function=NAME>{...}</function>``;
  Mistral ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`` and, since its v11 tokenizer,
  ``[TOOL_CALLS]NAME[ARGS]{...}``. Those are tool calls, not an answer.
- llama.cpp and older TGI send a call's ``arguments`` as a JSON object rather than JSON text.
- Some gateways send the content as a list of parts (``[{"type": "text", "text": ...}]``), not a string.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rigaudit.tools.core.record import Record
from rigaudit.tools.files.bounded import loads

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_ONLY = re.compile(r"^.*?</(think|thinking|reasoning)>", re.DOTALL | re.IGNORECASE)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


_PYTHON_TAG = "<|python_tag|>"
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_V11 = re.compile(r"\[TOOL_CALLS\]\s*([\w.-]+)\s*(?:\[CALL_ID\]\s*[\w-]+\s*)?\[ARGS\]")
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>\s*(.*?)\s*</function>", re.DOTALL)
_FENCED = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_SEPARATORS = " \t\r\n;,"


class TextCall(Record):
    """A tool call the model wrote as text."""

    name: str
    arguments: str
    form: str = "<tool_call>"
    """How it was written: ``<tool_call>``, ``<|python_tag|>``, ``bare JSON``, ``<function=...>``, ``[TOOL_CALLS]``."""


def strip_reasoning(text: str | None) -> tuple[str | None, bool]:
    """``text`` without its reasoning blocks, and whether there was one.

    A block left open (the answer was cut while thinking) drops everything after it; a lone
    ``</think>`` (the server's template opened the block) drops everything before it.
    """
    if text is None:
        return None, False
    stripped = _THINK.sub("", text)
    opened = _OPEN_THINK.search(stripped)
    if opened is not None:
        stripped = stripped[: opened.start()]
    stripped = _CLOSE_ONLY.sub("", stripped, count=1)
    if stripped == text:
        return text, False
    return stripped.strip(), True


def arguments_text(value: Any) -> str:
    """A call's arguments as JSON text, whether the server sent text, an object or nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def content_text(value: Any) -> str | None:
    """The content as text: a string as it is, a list of parts joined (their ``text``), anything else ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [part.get("text") if isinstance(part, dict) else getattr(part, "text", None) for part in value]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def text_tool_calls(content: str | None) -> tuple[str | None, tuple[TextCall, ...]]:
    """The tool calls ``content`` writes in a documented text form, and the content left around them.

    Text that only looks like one (a block that is not a JSON object with a string ``name``, a call
    inside prose, Llama's built-in Python calls) stays content: it is not a call.
    """
    if not content:
        return content, ()
    for parse in (_hermes, _python_tag, _function_tags, _mistral, _bare):
        found = parse(content)
        if found is not None:
            return found
    return content, ()


def _hermes(content: str) -> tuple[str | None, tuple[TextCall, ...]] | None:
    if "<tool_call>" not in content:
        return None
    calls: list[TextCall] = []
    kept: list[str] = []
    last = 0
    for match in _TOOL_CALL.finditer(content):
        call = _one_call(match.group(1))
        if call is None:
            continue
        kept.append(content[last : match.start()])
        last = match.end()
        calls.append(call)
    if not calls:
        return None
    kept.append(content[last:])
    return _rest("".join(kept)), tuple(calls)


def _python_tag(content: str) -> tuple[str | None, tuple[TextCall, ...]] | None:
    at = content.find(_PYTHON_TAG)
    if at < 0:
        return None
    body = content[at + len(_PYTHON_TAG) :].replace("<|eom_id|>", "").replace("<|eot_id|>", "")
    calls = _json_calls(body, "<|python_tag|>")
    return (_rest(content[:at]), calls) if calls else None


def _function_tags(content: str) -> tuple[str | None, tuple[TextCall, ...]] | None:
    calls: list[TextCall] = []
    for match in _FUNCTION_TAG.finditer(content):
        arguments = _json_value(match.group(2))
        if not isinstance(arguments, dict):
            return None
        calls.append(TextCall(match.group(1), arguments_text(arguments), "<function=...>"))
    return (_rest(_FUNCTION_TAG.sub("", content)), tuple(calls)) if calls else None


def _mistral(content: str) -> tuple[str | None, tuple[TextCall, ...]] | None:
    at = content.find(_MISTRAL)
    if at < 0:
        return None
    named = list(_MISTRAL_V11.finditer(content, at))
    if named:  # [TOOL_CALLS]NAME[ARGS]{...}, repeated
        decoder = json.JSONDecoder()
        calls: list[TextCall] = []
        for match in named:
            try:
                arguments, _ = decoder.raw_decode(content, match.end())
            except (json.JSONDecodeError, RecursionError):
                return None
            if not isinstance(arguments, dict) or _json_value(json.dumps(arguments)) is None:
                return None
            calls.append(TextCall(match.group(1), arguments_text(arguments), "[TOOL_CALLS]"))
        return _rest(content[:at]), tuple(calls)
    found = _json_calls(content[at + len(_MISTRAL) :], "[TOOL_CALLS]")
    return (_rest(content[:at]), found) if found else None


def _bare(content: str) -> tuple[str | None, tuple[TextCall, ...]] | None:
    """The whole content is one or more JSON calls (Llama 3.x's JSON tool calling), nothing else."""
    text = content.strip()
    fenced = _FENCED.match(text)
    if fenced is not None:
        text = fenced.group(1)
    if not text.startswith(("{", "[")):
        return None
    found = _json_calls(text, "bare JSON", whole=True, strict=True)
    return (None, found) if found else None


def _json_calls(text: str, form: str, *, whole: bool = False, strict: bool = False) -> tuple[TextCall, ...]:
    """The calls in ``text``: JSON objects (or lists of them) separated by ``;``, ``,`` or spaces; every
    object must be a call (``strict``: with no key but a call's); ``whole``: nothing else in ``text``."""
    decoder = json.JSONDecoder()
    calls: list[TextCall] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _SEPARATORS:
            pos += 1
        if pos >= len(text):
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            if whole or not calls:
                return ()
            break
        if _json_value(text[pos:end]) is None:  # too deep, or a lone surrogate
            return ()
        for item in value if isinstance(value, list) else [value]:
            call = _call_of(item, form, strict=strict)
            if call is None:
                return ()
            calls.append(call)
        pos = end
    return tuple(calls)


def _call_of(item: Any, form: str, *, strict: bool = False) -> TextCall | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        return None
    if strict and (not set(item) <= _CALL_KEYS or not ({"arguments", "parameters"} & set(item))):
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        return TextCall(item["name"], arguments, form)
    return TextCall(item["name"], arguments_text(arguments if arguments is not None else {}), form)


def _json_value(text: str) -> Any:
    try:
        return loads(text)
    except json.JSONDecodeError:
        return None


def _rest(text: str) -> str | None:
    return text.strip() or None


def _one_call(text: str) -> TextCall | None:
    try:
        data = loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    return TextCall(data["name"], arguments_text(arguments if arguments is not None else {}))
