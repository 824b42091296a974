"""A systemd unit's ``Environment=`` (a unit file or drop-in, ``systemctl cat``, ``systemctl show``): the
service's environment, so it is redacted as ``/proc/PID/environ`` is, by the allow-list. A variable some check
reads keeps its value; every other keeps its name and ``<redacted>`` (``Environment="CUSTOM=x" NCCL_DEBUG=INFO``
becomes ``Environment="CUSTOM=<redacted>" NCCL_DEBUG=INFO``), quoted or not. ``EnvironmentFile=``,
``PassEnvironment=`` and ``UnsetEnvironment=`` name files and variables only, and stay."""

from __future__ import annotations

import re

from rigaudit.tools.redact._names import is_allowed_variable, is_secret_name
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally

_LINE = re.compile(r"(?m)^([ \t]*Environment=)([^\r\n]*)")
_WORD = re.compile(r"\"(?:[^\"\\\r\n]|\\.)*\"|'[^'\r\n]*'|[^\s\"']+")
"""One assignment as systemd splits the line: double-quoted (escapes inside), single-quoted, or a bare word."""
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)


def unit_environments(text: str, tally: Tally | None = None) -> str:
    """``text`` with the value of every ``Environment=`` variable no check reads replaced."""
    if "Environment=" not in text:
        return text
    return _LINE.sub(lambda m: m.group(1) + _WORD.sub(lambda w: _assignment(w.group(0), tally), m.group(2)), text)


def _assignment(word: str, tally: Tally | None) -> str:
    quote = word[0] if len(word) >= 2 and word[0] in "\"'" and word[-1] == word[0] else ""
    match = _ASSIGNMENT.fullmatch(word[1:-1] if quote else word)
    if match is None:
        return word
    name, value = match.groups()
    if not value or value == REDACTED or is_allowed_variable(name):
        return word
    if tally is not None:
        tally.add("credential" if is_secret_name(name) else "environment")
    return f"{quote}{name}={REDACTED}{quote}"
