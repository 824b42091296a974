"""Identifiers already met: found again wherever and however they are printed.

A value is an identifier because of where it was read (a file of a kind, a label, NVML's serial), but a tool
result may print it where nothing says so: through a link of another name, by a command that names no file
(``dmidecode -s system-serial-number``, ``nvidia-smi --query-gpu=serial --format=csv``, ``lsblk -o SERIAL``),
with a line number or a ``$`` after it (``nl``, ``cat -A``), one character a line (``grep -o .``, ``fold``),
in half (``head -c 16``, ``cut -c``, a cut mid-value), as UTF-16 or base64. Every value :func:`as_digest
<rigaudit.tools.redact._ids.as_digest>` turns into a digest (and every value :func:`learn` is told of: the host's
identifier files, read before a model sees anything) is kept here, in this process, by its digest; then, in any
text digested, the same value becomes the same digest:

* the value itself, in any case, between characters that are not letters or digits (nor a dot that joins it to
  more: ``.7XQ3PL2.CN...`` is another serial);
* the value with white space between its characters (split across lines or columns);
* a piece of it (a run of letters and digits of at least :data:`PIECE` characters, of three different ones,
  that is part of a known value): the whole value's digest, since it names the same thing.

Values shorter than :data:`SHORTEST` characters, longer than 64, with white space or without a digit are not
kept (a word would be found everywhere). At most :data:`MOST` values are kept; a longer run keeps the first.
"""

from __future__ import annotations

import functools
import re
import threading

from rigaudit.tools.core.record import Record

SHORTEST = 6
PIECE = 10
MOST = 256
_WS = re.compile(r"\s+")
_RUN = re.compile(rf"(?<![0-9A-Za-z:-])(?<![0-9A-Za-z]\.)[0-9A-Za-z]{{{PIECE},}}(?![0-9A-Za-z:-]|\.[0-9A-Za-z])")
"""A piece of a value: not a group of a UUID or an address (``-``, ``:``), which is another value's."""


class _Known(Record):
    generation: int
    tokens: dict[str, str]
    """The value (lower-case) -> its digest (``serial:1a2b...``)."""
    pieces: tuple[tuple[str, str], ...]
    """The values a piece is looked for in (none of a UUID's or an address's shape)."""


class _Registry:
    """What this process knows: replaced whole under a lock, read without one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = _Known(0, {}, ())
        self.epoch = 0


_REGISTRY = _Registry()


def epoch() -> int:
    """Changes whenever every value is forgotten."""
    return _REGISTRY.epoch


def generation() -> int:
    """Changes whenever a value is learned (what caches of digested text key by)."""
    return _REGISTRY.state.generation


@functools.lru_cache(maxsize=256)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    """The values, each with white space allowed between its characters, longest first."""
    spaced = (r"\s*".join(re.escape(c) for c in v) for v in sorted(values, key=len, reverse=True))
    return re.compile(rf"(?i)(?<![0-9A-Za-z])(?<![0-9A-Za-z]\.)(?:{'|'.join(spaced)})(?![0-9A-Za-z]|\.[0-9A-Za-z])")


def learnable(value: str) -> bool:
    """Whether ``value`` is kept: long enough, and with a digit (a word is no identifier to look for)."""
    text = value.strip()
    return SHORTEST <= len(text) <= 64 and any(c.isdigit() for c in text) and not any(c.isspace() for c in text)


def learn(value: str, token: str) -> None:
    """Keep ``value`` (an identifier) and ``token``, its digest."""
    low = value.strip().lower()
    if not learnable(low) or _REGISTRY.state.tokens.get(low) == token:
        return
    with _REGISTRY.lock:
        state = _REGISTRY.state
        if (low in state.tokens and not _vaguer(state.tokens[low], token)) or len(state.tokens) >= MOST:
            return
        tokens = {**state.tokens, low: token}
        pieces = tuple((v, t) for v, t in tokens.items() if "-" not in v and ":" not in v)
        _REGISTRY.state = _Known(state.generation + 1, tokens, pieces)


def _vaguer(old: str, new: str) -> bool:
    """Whether ``old`` names a vaguer kind than ``new`` (``id:`` for what is a ``machine-id:``)."""
    return old.split(":", 1)[0] in ("id", "uuid") and new.split(":", 1)[0] not in ("id", "uuid")


def token_of(value: str) -> str | None:
    """The digest ``value`` is known by, or ``None``."""
    return _REGISTRY.state.tokens.get(value.strip().lower())


def forget() -> None:
    """Forget every value (tests; a long-running process between unrelated hosts)."""
    with _REGISTRY.lock:
        _REGISTRY.state = _Known(_REGISTRY.state.generation + 1, {}, ())
        _REGISTRY.epoch += 1


def mask_known(data: bytes) -> bytes:
    """``data`` (bytes that are not text) with each known value's bytes, in any case, overwritten with ``*``."""
    state = _REGISTRY.state
    if not state.tokens or not data:
        return data
    out = data
    low = data.lower()
    for value in state.tokens:
        raw = value.encode("utf-8", "replace")
        if raw in low:
            out = re.sub(b"(?i)" + re.escape(raw), lambda m: b"*" * len(m.group()), out)
    return out


def _piece(m: re.Match[str], pieces: tuple[tuple[str, str], ...]) -> str:
    run = m.group().lower()
    if len(set(run)) < 3:
        return m.group()
    for value, token in pieces:
        if run in value:
            return token
    return m.group()


def digest_known(text: str) -> tuple[str, int]:
    """``text`` with every known value, spaced out or in part, as its digest; and how many were found."""
    state = _REGISTRY.state
    if not state.tokens or not text:
        return text, 0
    low = text.lower()
    squeezed = _WS.sub("", low) if any(c.isspace() for c in low) else low
    found = 0
    hits = tuple(sorted(value for value in state.tokens if value in squeezed))
    if hits:
        pattern, tokens = _pattern(hits), state.tokens

        def whole(m: re.Match[str]) -> str:
            nonlocal found
            token = tokens.get(_WS.sub("", m.group().lower()))
            found += token is not None
            return token or m.group()

        text = pattern.sub(whole, text)
    if state.pieces and _RUN.search(text):

        def piece(m: re.Match[str]) -> str:
            nonlocal found
            new = _piece(m, state.pieces)
            found += new != m.group()
            return new

        text = _RUN.sub(piece, text)
    return text, found
