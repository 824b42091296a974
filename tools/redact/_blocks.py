"""Raw bytes, before any decoding or splitting: environment blocks, argument vectors, credential files,
command output, and binary files.

* ``/proc/PID/environ`` (NUL-separated) and what lists an environment (``env``, ``printenv``,
  ``strings /proc/PID/environ``): an allow-list. A variable some check reads (:mod:`._names`)
  keeps its value, redacted of secret shapes; every other keeps its name, its value replaced.
* ``/proc/PID/cmdline`` (NUL-separated): word by word (:mod:`._argv`), then each word as text.
* Any other NUL-separated text is read as one of those two; binary files (PCI configuration space)
  are left byte for byte under ``/sys``, and elsewhere only keep their length: a token of a known
  format inside them is overwritten with ``*``.
* Credential files by their format: ``/etc/shadow``, ``.pgpass``, ``.netrc``, and files named like a
  secret (``token``, ``.vault-token``) that hold one word.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import zlib
from collections.abc import Sequence

from rigaudit.tools.redact._argv import redact_words
from rigaudit.tools.redact._names import is_allowed_variable, is_secret_name
from rigaudit.tools.redact._shapes import PEM, REDACTED, SHAPES
from rigaudit.tools.redact._tally import Tally
from rigaudit.tools.redact._text import redact_text
from rigaudit.tools.redact._values import secret_value

_PROC = r"^/proc/[^/]+(?:/task/[^/]+)?/"
PROC_ENVIRON = re.compile(_PROC + r"environ$")
PROC_CMDLINE = re.compile(_PROC + r"cmdline$")
_ENV_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)=(.*)", re.DOTALL)
_ENV_PROGRAMS = frozenset({"env", "printenv"})
_SHADOW = frozenset({"shadow", "shadow-", "gshadow", "gshadow-"})
_NO_PASSWORD = frozenset({"", "*", "!", "!!", "x", "!*", "*LK*", "NP"})
_PRINTABLE = re.compile(rb"[\x20-\x7e]{8,}")
_BINARY_PAIR = re.compile(r"(?<![\w.-])(?=([A-Za-z_][\w.-]*)[\"']?[ \t]*[=:][ \t]*[\"']?([^\s\"'&;,]{1,256}))")
"""``name=value`` or ``"name": "value"`` anywhere in a printable run (overlapping: ``MESSAGE=password=...``)."""
GZIP_LIMIT = 64 << 20
"""The most a gzip file is unpacked to be redacted (a larger one is judged as binary)."""


def _count(tally: Tally | None, kind: str, n: int = 1) -> None:
    if tally is not None and n:
        tally.add(kind, n)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# -- environments -----------------------------------------------------------------------------


def redact_variable(entry: str, tally: Tally | None = None) -> str:
    """One ``NAME=value`` of an environment: kept when a check reads it, else its value replaced."""
    match = _ENV_LINE.fullmatch(entry)
    if match is None:
        return redact_text(entry, tally)
    name, value = match.group(1), match.group(2)
    if not value or value == REDACTED:
        return entry
    if is_allowed_variable(name):
        kept = redact_text(value, tally)
        return entry if kept is value else f"{name}={kept}"
    _count(tally, "credential" if is_secret_name(name) else "environment")
    return f"{name}={REDACTED}"


def redact_environ(data: bytes, tally: Tally | None = None) -> bytes:
    """A NUL-separated environment block (``/proc/PID/environ``), by the allow-list."""
    parts = [redact_variable(_decode(p), tally) if p else "" for p in data.split(b"\x00")]
    return _encode("\x00".join(parts))


def redact_environment_lines(text: str, tally: Tally | None = None) -> str:
    """An environment listed one variable a line (``env``); a line that is not ``NAME=`` continues the one above."""
    entries: list[str] = []
    for line in text.splitlines(True):
        if entries and not _ENV_LINE.match(line):
            entries[-1] += line
        else:
            entries.append(line)
    out = []
    for entry in entries:
        body = entry.rstrip("\n")
        out.append(redact_variable(body, tally) + entry[len(body) :])
    return "".join(out)


# -- command lines ----------------------------------------------------------------------------


def redact_argv(argv: Sequence[str], tally: Tally | None = None) -> list[str]:
    """An argument vector: credential flags' values replaced, then each word redacted as text."""
    return [redact_text(word, tally) for word in redact_words(list(argv), tally)]


def redact_cmdline(data: bytes, tally: Tally | None = None) -> bytes:
    """A NUL-separated argument vector (``/proc/PID/cmdline``)."""
    words = [_decode(w) for w in data.split(b"\x00")]
    return _encode("\x00".join(redact_argv(words, tally)))


def lists_environment(argv: Sequence[str]) -> bool:
    """Whether a command prints an environment (``env``, ``printenv``, ``strings /proc/1/environ``...)."""
    if not argv:
        return False
    program = posixpath.basename(argv[0])
    if program in _ENV_PROGRAMS and all(a.startswith("-") for a in argv[1:]):
        return True
    return any(PROC_ENVIRON.match(a) for a in argv[1:])


def redact_output(argv: Sequence[str], text: str, tally: Tally | None = None) -> str:
    """A command's output: an environment by the allow-list, anything else as text."""
    if lists_environment(argv):
        if "\x00" in text:
            return "\x00".join(redact_environment_lines(p, tally) for p in text.split("\x00"))
        return redact_environment_lines(text, tally)
    return redact_text(text, tally)


# -- files --------------------------------------------------------------------------------------


def _fields(text: str, *, sep: str, index: int, keep: frozenset[str], tally: Tally | None) -> str:
    out = []
    for line in text.splitlines(True):
        body = line.rstrip("\r\n")
        parts = body.split(sep)
        secret = len(parts) > abs(index) and parts[index] not in keep and parts[index] != REDACTED
        if secret and not body.lstrip().startswith("#"):
            parts[index] = REDACTED
            _count(tally, "password_hash" if sep == ":" and index == 1 else "credential")
        out.append(sep.join(parts) + line[len(body) :])
    return "".join(out)


def _netrc(text: str, tally: Tally | None) -> str:
    words = re.split(r"(\s+)", text)
    for i in range(0, len(words) - 2, 2):
        if words[i] in ("password", "account") and words[i + 2] not in ("", REDACTED):
            words[i + 2] = REDACTED
            _count(tally, "credential")
    return "".join(words)


def _credential_file(path: str, text: str, tally: Tally | None) -> str | None:
    """The redaction of a file whose format says where its secrets are; ``None`` for any other file."""
    name = posixpath.basename(path)
    if name in _SHADOW:
        return _fields(text, sep=":", index=1, keep=_NO_PASSWORD, tally=tally)
    if name == ".pgpass":
        return _fields(text, sep=":", index=-1, keep=frozenset({""}), tally=tally)
    if name in (".netrc", "_netrc"):
        return _netrc(text, tally)
    stem = name.lstrip(".").rsplit(".", 1)[0] if name.lstrip(".").count(".") == 1 else name.lstrip(".")
    single = text.strip()
    if single and len(single.split()) == 1 and is_secret_name(stem) and single != REDACTED:
        _count(tally, "credential")
        return text.replace(single, REDACTED)
    return None


def _binary(path: str, data: bytes, tally: Tally | None) -> bytes:
    """A binary file keeps its length: known token formats and the values of secret names (``password=...``,
    ``"token":"..."``) in its printable runs become ``*``."""
    if path.startswith(("/sys/", "/dev/")):
        return data
    out = bytearray(data)
    for run in _PRINTABLE.finditer(data):
        text = run.group().decode("ascii")
        for pattern in [PEM, *(s.pattern for s in SHAPES)]:
            for match in pattern.finditer(text):
                start, end = run.start() + match.start(), run.start() + match.end()
                out[start:end] = b"*" * (end - start)
                _count(tally, "binary")
        for match in _BINARY_PAIR.finditer(text):
            if secret_value(match.group(1), match.group(2)):
                start, end = run.start() + match.start(2), run.start() + match.end(2)
                out[start:end] = b"*" * (end - start)
                _count(tally, "binary")
    return bytes(out)


def gunzip(data: bytes) -> bytes | None:
    """The content of gzip ``data``; ``None`` when it is not gzip, is damaged, or unpacks to more than
    :data:`GZIP_LIMIT` (a bomb: then it is judged as the binary file it is)."""
    if data[:2] != b"\x1f\x8b":
        return None
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            plain = stream.read(GZIP_LIMIT + 1)
    except (OSError, EOFError, zlib.error):
        return None
    return plain if len(plain) <= GZIP_LIMIT else None


def _gzip(path: str, data: bytes, tally: Tally | None) -> bytes | None:
    """A gzip file (a rotated log): its content redacted and compressed again (``None``: see :func:`gunzip`)."""
    plain = gunzip(data)
    if plain is None:
        return None
    inner = path[:-3] if path.endswith(".gz") else ""
    counted = Tally()
    redacted = redact_bytes(plain, inner, counted)
    _count(tally, "binary", counted.total())  # inside the compressed file: no marker a reader of the bundle sees
    return data if redacted is plain else gzip.compress(redacted, mtime=0)


def _utf16(path: str, data: bytes, tally: Tally | None) -> bytes | None:
    """A UTF-16 text file (its byte-order mark says so): decoded, redacted, encoded again."""
    try:
        text = data.decode("utf-16")
    except UnicodeDecodeError:
        return None
    redacted = redact_text(text, tally)
    return data if redacted is text else data[:2] + redacted.encode("utf-16-le" if data[:2] == b"\xff\xfe" else "utf-16-be")


def _nul_text(data: bytes) -> bool:
    """NUL-separated words of text (an environment or argv copied elsewhere), not a binary file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(part.isprintable() for part in text.split("\x00"))


def _assignments(data: bytes) -> int:
    return sum(bool(_ENV_LINE.match(p)) for p in _decode(data).split("\x00"))


def redact_bytes(data: bytes, path: str = "", tally: Tally | None = None) -> bytes:
    """The raw bytes of a file read at ``path`` (``""``: unknown), secrets redacted; unchanged bytes are returned as is."""
    if not data:
        return data
    if data[:2] == b"\x1f\x8b" and (unpacked := _gzip(path, data, tally)) is not None:
        return unpacked
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") and (decoded := _utf16(path, data, tally)) is not None:
        return decoded
    if PROC_ENVIRON.match(path):
        out = redact_environ(data, tally) if b"\x00" in data else _encode(redact_environment_lines(_decode(data), tally))
    elif b"\x00" in data:
        if not _nul_text(data):
            out = _binary(path, data, tally)
        elif PROC_CMDLINE.match(path) or _assignments(data) * 2 < data.count(b"\x00"):
            out = redact_cmdline(data, tally)
        else:
            out = redact_environ(data, tally)
    else:
        text = _decode(data)
        special = _credential_file(path, text, tally) if path else None
        redacted = redact_text(special if special is not None else text, tally)
        out = data if redacted is text else _encode(redacted)
    return data if out == data else out
