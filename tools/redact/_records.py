"""Command lines encoded inside records: audit's hex ``proctitle=`` and ``EXECVE`` arguments, and argv arrays
written as JSON text (``"--api-key", "VALUE"``: ``docker inspect``, ``journalctl -o json``, a log line).

Each is decoded, redacted as the command line it is, and written back as readable text only when
something in it was a secret (an encoding hides a secret from every pattern: decoding comes first).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rigaudit.tools.redact._argv import redact_words
from rigaudit.tools.redact._names import is_secret_name
from rigaudit.tools.redact._shapes import REDACTED
from rigaudit.tools.redact._tally import Tally

TextRedaction = Callable[[str, Tally | None], str]

_PROCTITLE = re.compile(r"(\bproctitle=)((?:[0-9A-F]{2}){4,}|(?:[0-9a-f]{2}){4,})(?![0-9A-Za-z])")
_EXECVE_ARG = re.compile(r"(\ba\d+=)(?:\"([^\"\n]*)\"|((?:[0-9A-Fa-f]{2})+)(?![0-9A-Za-z]))")
_QUOTED_FLAG = re.compile(r"([\"'])(--?[A-Za-z][\w.-]*)\1(\s*,\s*)([\"'])((?:(?!\4)[^\\\n]|\\.)*)\4")


def _unhex(value: str) -> str | None:
    try:
        return bytes.fromhex(value).decode("utf-8")
    except ValueError:
        return None


def _argv_text(words: list[str], redact: TextRedaction, tally: Tally | None) -> list[str]:
    """The words of a command line, flag values and then each word redacted (counted only when kept)."""
    trial = Tally()
    out = [redact(w, trial) for w in redact_words(words, trial)]
    if out != words and tally is not None:
        for kind, n in trial.items():
            tally.add(kind, n)
    return out


def _proctitle(text: str, redact: TextRedaction, tally: Tally | None) -> str:
    def one(m: re.Match[str]) -> str:
        decoded = _unhex(m.group(2))
        if decoded is None:
            return m.group(0)
        words = decoded.split("\x00")
        redacted = _argv_text(words, redact, tally)
        return m.group(0) if redacted == words else m.group(1) + " ".join(redacted)

    return _PROCTITLE.sub(one, text)


def _execve(line: str, redact: TextRedaction, tally: Tally | None) -> str:
    args = list(_EXECVE_ARG.finditer(line))
    words = [m.group(2) if m.group(2) is not None else (_unhex(m.group(3)) or m.group(3)) for m in args]
    redacted = _argv_text(words, redact, tally)
    if redacted == words:
        return line
    out, pos = [], 0
    for m, old, new in zip(args, words, redacted, strict=True):
        if new != old:
            out += [line[pos : m.start()], f'{m.group(1)}"{new}"']
            pos = m.end()
    out.append(line[pos:])
    return "".join(out)


def _quoted_flags(text: str, tally: Tally | None) -> str:
    def one(m: re.Match[str]) -> str:
        if not is_secret_name(m.group(2)) or not m.group(5) or REDACTED in m.group(5) or m.group(5).startswith("-"):
            return m.group(0)
        if tally is not None:
            tally.add("credential")
        return f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{m.group(4)}{REDACTED}{m.group(4)}"

    return _QUOTED_FLAG.sub(one, text)


def redact_records(text: str, redact: TextRedaction, tally: Tally | None) -> str:
    """``text`` with the command lines encoded in it redacted (the same object when nothing changed)."""
    out = text
    if "proctitle=" in out:
        out = _proctitle(out, redact, tally)
    if "a0=" in out:
        out = "".join(_execve(line, redact, tally) if "a0=" in line else line for line in out.splitlines(True))
    if "-" in out and ('",' in out or "'," in out):
        out = _quoted_flags(out, tally)
    return text if out == text else out
