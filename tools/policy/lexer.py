"""Find what a shell would have treated specially in a command line, without any shell.

The line is split with :func:`shlex.split` (POSIX rules); before that, :func:`scan` walks it the way a
shell's tokenizer would and reports every unquoted operator and every expansion, so that a command
written for a shell (``a; b``, ``x > f``, ``$(y)``, ``"$HOME"``) is refused instead of silently run
with different meaning.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from typing import Literal

from rigaudit.tools.core.record import Record

_OPERATOR_CHARS = frozenset(";&|<>()")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_SPECIAL_PARAMS = frozenset("0123456789?$!#@*-'\"")


class Special(Record):
    kind: Literal["operator", "expansion", "comment"]
    text: str
    offset: int


def _expansion_at(line: str, i: int) -> str | None:
    """The expansion starting with ``$`` at ``line[i]``, or ``None`` for a literal dollar."""
    nxt = line[i + 1] if i + 1 < len(line) else ""
    if nxt in ("(", "{", "[") or nxt in _NAME_START or nxt in _SPECIAL_PARAMS:
        return line[i : i + 2]
    return None


def _in_double_quotes(line: str, i: int, found: list[Special]) -> tuple[int, bool]:
    """One character inside double quotes, where only expansions stay special: (the next index, whether the quote
    closed here)."""
    c = line[i]
    if c == "\\":
        return i + 2, False
    if c == '"':
        return i + 1, True
    if c == "`":
        found.append(Special("expansion", "`", i))
    elif c == "$" and (text := _expansion_at(line, i)) is not None:
        found.append(Special("expansion", text, i))
    return i + 1, False


def _operator_at(line: str, i: int) -> Special:
    """The run of operator characters at ``line[i]`` (process substitution ``<(`` and ``>(`` is an expansion)."""
    j = i
    while j < len(line) and line[j] in _OPERATOR_CHARS:
        j += 1
    text = line[i:j]
    return Special("expansion" if text in ("<(", ">(") else "operator", text, i)


def scan(line: str) -> list[Special]:
    """Every unquoted operator, comment and expansion (also inside double quotes) in ``line``."""
    found: list[Special] = []
    quote = ""
    word_start = True
    i = 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            quote = "" if c == "'" else quote
            i += 1
            continue
        if quote == '"':
            i, closed = _in_double_quotes(line, i, found)
            quote = "" if closed else quote
            continue
        if c == "\\":
            word_start = False
            i += 2
            continue
        if c in "'\"":
            quote = c
            word_start = False
        elif c in " \t":
            word_start = True
        elif c in "\n\r":
            found.append(Special("operator", "newline", i))
            word_start = True
        elif c in _OPERATOR_CHARS:
            found.append(operator := _operator_at(line, i))
            i += len(operator.text)
            word_start = True
            continue
        elif c == "`":
            found.append(Special("expansion", "`", i))
        elif c == "$" and (text := _expansion_at(line, i)) is not None:
            found.append(Special("expansion", text, i))
            word_start = False
            i += len(text)
            continue
        elif c == "#" and word_start:
            found.append(Special("comment", "#", i))
            break
        else:
            word_start = False
        i += 1
    return found


@lru_cache(maxsize=512)
def split(line: str) -> tuple[str, ...]:
    """POSIX word splitting, no expansion; raises :class:`ValueError` (unbalanced quotes...)."""
    return tuple(shlex.split(line, comments=False, posix=True))
