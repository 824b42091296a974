"""What of an answer being streamed may be shown to the person before it is whole.

The answer shown at the end is the whole reply, reasoning cut, tool calls written as text parsed,
redacted (:mod:`~rigaudit.agents.llm.client`). While it streams, the text so far is shown with the
same care: a reasoning block is cut (one still open hides the rest), nothing from a tool call written
as text on (``<tool_call>``, ``<|python_tag|>``, ``<function=``, ``[TOOL_CALLS]``), nothing of a content
that opens as JSON (a call or a structured answer), and the last word is held back until a space ends
it (a ``<tag`` not yet closed with it), so a secret or an identifier is redacted whole, never shown in part.
"""

from __future__ import annotations

import re

from rigaudit.agents.llm.wire import strip_reasoning
from rigaudit.tools.redact import digest_ids, redact_text

CALL_MARKS = ("<tool_call>", "<|python_tag|>", "<function=", "[TOOL_CALLS]")
"""Where tool calls written as text begin: nothing from there on is shown."""
_UNFINISHED = re.compile(r"\S+$")
"""The last word (or a tag not closed yet): shown once a space ends it."""
_JSON = re.compile(r"\{|\[\s*[{\[\"]|```")
"""How a content that is JSON opens (a bare call, a list of them, a structured answer, a fence)."""


def shown_so_far(text: str) -> str:
    """The part of a streamed answer's ``text`` so far that may be shown: redacted, identifiers as digests."""
    kept, _ = strip_reasoning(text)
    kept = kept or ""
    for mark in CALL_MARKS:
        at = kept.find(mark)
        if at >= 0:
            kept = kept[:at]
    if not text[-1:].isspace():
        kept = _UNFINISHED.sub("", kept)
    kept = kept.strip()
    if _JSON.match(kept):
        return ""
    return digest_ids(redact_text(kept)) if kept else ""


__all__ = ["CALL_MARKS", "shown_so_far"]
