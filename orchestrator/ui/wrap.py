"""Wrap text at spaces, for a terminal of a known width: a word or an id is never broken.

Rich folds a word longer than its column at any character, and a soft-wrapped line is broken by the
terminal wherever its edge falls. Here a line breaks at spaces only; a token wider than the line
(a long path, a list glued by commas) breaks after one of :data:`BREAK_AFTER`, and only a token
with no such place is cut (nothing rigaudit prints is one). Styles are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.text import Text

BREAK_AFTER = "/,;:"
"""Where a token too wide for a line may break: after a path separator or a list's comma."""
_TOKEN = re.compile(r"\S+")
_PIECE = re.compile(rf"[^{re.escape(BREAK_AFTER)}]*(?:[{re.escape(BREAK_AFTER)}]+|$)")


def pieces(token: str) -> list[str]:
    """``token`` cut after each of :data:`BREAK_AFTER`: ``/sys/devices/`` -> ``/``, ``sys/``, ``devices/``."""
    return [p for p in _PIECE.findall(token) if p]


def longest_piece(text: str) -> int:
    """The widest thing in ``text`` that :func:`wrap` never breaks (the least width that keeps every word whole)."""
    return max((len(p) for token in _TOKEN.findall(text) for p in pieces(token)), default=0)


def least_width(text: str, hang: int = 2) -> int:
    """The least width at which :func:`wrap` keeps every word of ``text`` whole (each line's continuations are
    indented: its leading spaces and ``hang``)."""
    widest = 0
    for line in text.split("\n"):
        lead = len(line) - len(line.lstrip(" "))
        widest = max(widest, lead + hang + longest_piece(line))
    return widest


def _spans(token: str, start: int, room: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the parts of a token wider than ``room``: as many pieces as fit, each part; cut only a
    piece wider than ``room`` by itself."""
    at = end = start
    for piece in pieces(token):
        size = len(piece)
        if end > at and end + size - at > room:
            yield at, end
            at = end
        while size > room:  # no place to break in it: the last resort
            yield end, end + room
            end, size = end + room, size - room
            at = end
        end += size
    if end > at:
        yield at, end


def _wrap_line(line: Text, width: int, hang: int) -> list[Text]:
    """One line (no newline in it) as lines of at most ``width`` cells; the later ones indented ``hang`` more
    than its own leading spaces."""
    plain = line.plain
    lead = len(plain) - len(plain.lstrip(" "))
    indent = min(lead + hang, max(0, width // 2))
    out: list[Text] = []
    current: Text | None = None
    column = 0

    def flush() -> None:
        nonlocal current, column
        if current is not None:
            out.append(current)
        current, column = None, 0

    for match in _TOKEN.finditer(plain):
        start, end = match.span()
        if current is not None and column + 1 + (end - start) <= width:
            current.append(" ")
            current.append_text(line[start:end])
            column += 1 + end - start
            continue
        flush()
        for begin, finish in _spans(match.group(), start, max(1, width - max(lead, indent))):
            flush()
            prefix = indent if out else lead
            current = Text(" " * prefix)
            current.append_text(line[begin:finish])
            column = prefix + finish - begin
    flush()
    return out or [Text("")]


def wrap(text: Text | str, width: int, *, hang: int = 2) -> Text:
    """``text`` with each of its lines wrapped at spaces to ``width`` cells (continuations indented ``hang``
    more than the line they continue); every line of the result fits."""
    source = Text(text) if isinstance(text, str) else text
    lines = [wrapped for line in source.split("\n", allow_blank=True) for wrapped in _wrap_line(line, width, hang)]
    return Text("\n").join(lines)


__all__ = ["BREAK_AFTER", "least_width", "longest_piece", "pieces", "wrap"]
