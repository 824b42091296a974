"""Path patterns for the policy's lists: ``*`` within a name, ``**`` across names, ``{a,b}`` either,
``[0-9]`` one of, ``<pid>`` a process (``1234``, ``self``, ``thread-self``, optionally ``/task/TID``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_PID = r"(?:[0-9]+|self|thread-self)(?:/task/[0-9]+)?"


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("/**", i):
            out.append(r"(?:/.*)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(r".*")
            i += 2
            continue
        if pattern.startswith("<pid>", i):
            out.append(_PID)
            i += 5
            continue
        if c == "[" and (close := pattern.find("]", i + 1)) > i + 1:
            out.append("[" + pattern[i + 1 : close].replace("\\", "\\\\") + "]")
            i = close + 1
            continue
        if c == "*":
            out.append(r"[^/]*")
        elif c == "?":
            out.append(r"[^/]")
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"unbalanced braces in {pattern!r}")
    return "".join(out)


class Globs:
    """Paths matched by any of a list of patterns: translated and compiled into one regex when first matched (a
    check matches one or two of the policy's dozen lists; translating them all cost every start ~40 M
    instructions). A malformed pattern raises :class:`ValueError` then; ``tests/test_policy_lazy.py``
    translates every list the policy defines, so none ships malformed."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._regex: re.Pattern[str] | None = None

    @property
    def source(self) -> str:
        """The one regex's source (raises :class:`ValueError` on a malformed pattern)."""
        return "|".join(f"(?:{_translate(p)})" for p in self.patterns)

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._regex = re.compile(self.source)
        return self._regex

    def fullmatch(self, path: str) -> re.Match[str] | None:
        return self.regex.fullmatch(path)


def compile_globs(patterns: Iterable[str]) -> Globs:
    """What fully matches a path matched by any of ``patterns``."""
    return Globs(patterns)
