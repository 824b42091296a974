"""What real servers send back, made uniform: reasoning stripped, tool calls written as text parsed, arguments as text.

- Reasoning models put their thoughts in ``<think>...</think>`` before the answer (Qwen3, DeepSeek-R1
  without a reasoning parser) or in a separate ``reasoning_content`` field (vLLM/SGLang with one):
  neither is the answer, so the block is cut before anything is parsed.
- Hermes/Qwen-style models without a server-side tool parser write ``<tool_call>{"name": ...,
  "arguments": {...}}</tool_call>`` in the content: those are tool calls, not an answer.
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


class TextCall(Record):
    """A tool call the model wrote as text."""

    name: str
    arguments: str


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
    """The ``<tool_call>`` blocks of ``content`` as calls, and the content left around them.

    A block that is not a JSON object with a string ``name`` stays in the content (it is not a call).
    """
    if not content or "<tool_call>" not in content:
        return content, ()
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
        return content, ()
    kept.append(content[last:])
    rest = "".join(kept).strip()
    return (rest or None), tuple(calls)


def _one_call(text: str) -> TextCall | None:
    try:
        data = loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    return TextCall(data["name"], arguments_text(arguments if arguments is not None else {}))
