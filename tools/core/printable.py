"""Text from a host, a snapshot or a model made safe to show: no terminal control sequences, no bidi tricks.

A GPU name, a log line or a host name can carry ``ESC ] 0 ; title BEL``, ``ESC [ 2 J`` (clear the
screen), a right-to-left override that shows ``exe.txt`` for ``txt.exe``, or zero-width characters
that hide a word: shown raw, they act on the reader's terminal or mislead the eye. Each such
character is written as its visible escape instead (``\\x1b``, ``\\u202e``), so tampering shows.
Newlines and tabs are kept.
"""

from __future__ import annotations

import re

_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
"""C0 and C1 controls (but newline and tab), DEL, bidi marks, embeddings, overrides and isolates,
zero-width and invisible characters, line and paragraph separators."""


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control, bidi and invisible character written as its escape (the same object when none)."""
    return re.sub(_UNSAFE, _shown, text) if re.search(_UNSAFE, text) else text
