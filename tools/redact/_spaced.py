"""A credential key and its value with white space between them, wherever a line holds one.

* a line that is only ``KEY VALUE`` (Java properties, Redis, a ``.conf``), also behind a comment marker (``#``,
  ``;``, ``//``, ``!``, ``--``) and before a trailing ``# comment``: the value is a secret when the key names a
  credential (its last word is one: ``db.password``, ``rd.auth_token``, ``foo-password``, ``apitoken``) or is
  ``key`` holding key material; a path is kept (``HostKey /etc/ssh/ssh_host_ed25519_key``);
* inside a line (a log line, prose): a compound credential key (dotted, dashed, underscored or glued; a bare
  ``password`` is prose: ``Failed password for``) and the word after it, unless that word is a plain word
  (``HF_TOKEN not set``), a number of a setting, or a path;
* a quoted literal after any credential key (SQL's ``WITH PASSWORD 'x'``, ``password "two words"``);
* directives whose next word is a password: Redis's ``requirepass`` and ``masterauth``, snmpd's
  ``rocommunity``/``rwcommunity``, HAProxy's ``stats auth USER:PASS``, SQL's ``IDENTIFIED BY 'x'``.
"""

from __future__ import annotations

import re

from rigaudit.tools.redact._names import SECRET_WORDS, names_credential, secret_strength
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally
from rigaudit.tools.redact._values import secret_value

_WORDS_LINE = re.compile(
    r"^([ \t]*(?:(?:#+|;+|/{2,}|!|--)[ \t]*)?)([A-Za-z_][\w.-]*)([ \t]+)(?P<value>[^\s=:#][^\s]*)"
    r"(?P<rest>(?:[ \t]+#[^\n]*)?[ \t]*\r?)$",
    re.M,
)
_HINT = re.compile(
    r"(?:pass(?:word|wd|phrase)?|pwd|pw|key|token|secret|credentials?|auth(?:orization)?|cookie|bearer|dsn|sig(?:nature)?"
    r"|webhook|jwt|pat|otp|sas|psk|sessionid)[ \t]"
)
_HINT_ANY_CASE = re.compile(_HINT.pattern, re.I)
"""The credential word a key ends with, and the white space after it (found first: the key is then the run of name
characters before it)."""
_NAME = re.compile(r"[A-Za-z_][\w.-]*")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_BEFORE = frozenset("/=$\"'")
"""A key is not a part of a path, a value or a quoted string."""
_AFTER = re.compile(r"[ \t]+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<word>[^\s\"'<>=,;()\[\]{}-][^\s\"'<>=,;()\[\]{}]*))")
_PLAIN = re.compile(r"[A-Za-z][a-z]*")
_PATH = re.compile(r"~?/[\w.@%+/-]*")
_DIRECTIVE = re.compile(
    r"(?<![\w.-])((?:requirepass|masterauth|r[ow]community6?|stats[ \t]+auth"
    r"|identified[ \t]+(?:with[ \t]+\S+[ \t]+)?by(?:[ \t]+password)?)[ \t]+)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)",
    re.I,
)
_DIRECTIVE_HINT = ("requirepass", "masterauth", "community", "stats", "identified")
"""What every directive holds, lower-cased."""


def _count(tally: Tally | None) -> None:
    if tally is not None:
        tally.add("credential")


def _credential(name: str, value: str) -> bool:
    """A value that a key naming a credential (or ``key`` with key material) holds; paths are kept."""
    strength = secret_strength(name)
    if (strength == 0 and name.lower() != "key") or (strength and not names_credential(name)):
        return False
    return _PATH.fullmatch(value) is None and secret_value(name, value)


def words_lines(text: str, tally: Tally | None) -> str:
    """``KEY VALUE`` lines, behind a comment marker or not."""

    def line(m: re.Match[str]) -> str:
        if not _credential(m.group(2), m.group("value")):
            return m.group(0)
        _count(tally)
        return f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group('rest')}"

    return _WORDS_LINE.sub(line, text)


def _secret_after(line: str, name: str, after: re.Match[str]) -> tuple[int, int] | None:
    """Where the secret in ``after`` (the white space and the word or quoted literal after ``name``) is."""
    group = "dq" if after.group("dq") else "sq" if after.group("sq") else "word"
    value = after.group(group)
    if not _credential(name, value) or not names_credential(name):
        return None
    if group == "word" and (name.lower() in SECRET_WORDS or _PLAIN.fullmatch(value)):
        return None  # prose: "password for", "HF_TOKEN not set"
    return after.start(group), after.end(group)


def inline(line: str, tally: Tally | None) -> str:
    """Compound credential keys and the word after them, and quoted literals after any credential key, in a line."""
    out: list[str] = []
    pos = 0
    lowered = line.lower()
    hints = _HINT.finditer(lowered) if len(lowered) == len(line) else _HINT_ANY_CASE.finditer(line)
    for hint in hints:
        if hint.start() < pos:
            continue
        start = hint.start()
        while start > 0 and line[start - 1] in _NAME_CHARS:
            start -= 1
        end = hint.end() - 1
        name = _NAME.fullmatch(line, start, end)
        after = _AFTER.match(line, end) if name and (start == 0 or line[start - 1] not in _BEFORE) else None
        where = _secret_after(line, name.group(), after) if name and after else None
        if where is None:
            continue
        out += [line[pos : where[0]], REDACTED]
        pos = where[1]
        _count(tally)
    if not out:
        return line
    out.append(line[pos:])
    return "".join(out)


def directives(text: str, tally: Tally | None) -> str:
    """``requirepass VALUE`` and the like, anywhere in a line (a log line, a comment)."""

    def directive(m: re.Match[str]) -> str:
        if REDACTED in m.group(2):
            return m.group(0)
        _count(tally)
        return m.group(1) + REDACTED

    if text.isascii() and not any(word in text.lower() for word in _DIRECTIVE_HINT):
        return text  # (ASCII: what the case-blind pattern matches, lower-cased, holds one of them)
    return _DIRECTIVE.sub(directive, text)
