"""Reading input rigaudit did not just write: regular files only, every size, count and depth bounded.

Snapshots, share bundles, transcripts, journals, plans and benchmark results all come through here
(architecture.md, "Trust boundaries"). A file is opened only after ``lstat``/``stat`` says it is a
regular file, with ``O_NONBLOCK`` (a FIFO swapped in cannot hang) and, inside an untrusted tree,
``O_NOFOLLOW``; ``fstat`` then checks that the file opened is the one checked. JSON is parsed with
its nesting bounded. Every refusal is an :class:`InputError` whose message is one line.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from rigaudit.tools.core.errors import UsageError

MAX_FILE_BYTES = 8 * 1024 * 1024
"""One file of a snapshot's ``files/`` mirror (as ``LocalHost`` reads a live file)."""
MAX_INPUT_BYTES = 256 * 1024 * 1024
"""One whole input file: a transcript, a journal, a plan, ``commands.jsonl``..."""
MAX_LINE_BYTES = 16 * 1024 * 1024
"""One line of a JSONL input."""
MAX_LINES = 2_000_000
"""Lines of one JSONL input."""
MAX_ENTRIES = 1_000_000
"""Entries of one JSON index (``links.json``, ``dirs.json``, ``unreadable.json``)."""
MAX_JSON_DEPTH = 64
"""Nesting of arrays and objects in any JSON value read."""
MAX_TEXT = 1024 * 1024
"""One string taken from an input into a result (command output per stream)."""

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class InputError(UsageError):
    """An input file is refused or damaged; the message is one line naming the file."""


class JsonError(UsageError, json.JSONDecodeError):
    """Text that is not JSON, or JSON nested deeper than allowed (a ``json.JSONDecodeError``, so
    :func:`loads` replaces ``json.loads`` wherever that is caught)."""

    def __str__(self) -> str:
        return self.msg if not self.doc else super().__str__()


def _mib(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def kind_of(mode: int) -> str:
    """A file type in words, for messages: ``a FIFO``, ``a symbolic link``..."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_fd_bounded(fd: int, limit: int, what: str) -> bytes:
    """Read an open regular file to its end, refusing more than ``limit`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1024 * 1024, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputError(f"{what}: larger than {_mib(limit)}; refused")


def open_regular(path: Path | str, *, follow: bool = True, dir_fd: int | None = None) -> int:
    """An fd of ``path`` opened for reading, only if it is a regular file (else :class:`InputError`).

    ``follow=False`` refuses a symbolic link as the last component (files inside untrusted trees);
    a path the person named is followed. Raises ``OSError`` for a missing or unreadable file.
    """
    name = os.fspath(path)
    if "\x00" in name:
        raise InputError(f"{name!r}: a NUL byte in the path")
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=follow)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{name}: is {kind_of(st.st_mode)}, not a regular file; refused")
    fd = os.open(name, _READ_FLAGS | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            raise InputError(f"{name}: changed while it was opened; refused")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_to_read(path: Path | str, follow: bool, label: str) -> int:
    """:func:`open_regular`, its failure one :class:`InputError` line that names ``label``."""
    try:
        return open_regular(path, follow=follow)
    except FileNotFoundError:
        raise InputError(f"{label}: cannot read: no such file") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None


def read_regular(path: Path | str, *, limit: int = MAX_INPUT_BYTES, follow: bool = True, what: str | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; :class:`InputError` with one line otherwise."""
    label = what or os.fspath(path)
    fd = _open_to_read(path, follow, label)
    try:
        return read_fd_bounded(fd, limit, label)
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _too_deep(value: object, limit: int) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
_SURROGATE = "[\ud800-\udfff]"


def _lone_surrogate(value: object) -> bool:
    """Whether a string (key or value) of a parsed document holds half a UTF-16 pair (``"\\ud800"``): no text
    can be written with one (every later encode would fail), so the document is refused where it is read."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if re.search(_SURROGATE, item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _no_constant(name: str) -> object:
    """``NaN`` or ``Infinity`` met with ``allow_nan=False``."""
    raise JsonError(f"{name} is not a JSON number", "", 0)


def loads(data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = True) -> object:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` (:class:`JsonError`, never RecursionError)
    and strings holding a lone UTF-16 surrogate; ``allow_nan=False`` also refuses ``NaN`` and ``Infinity`` (not
    JSON: what rigaudit writes with pydantic never holds them)."""
    deep = f"nested deeper than {max_depth} levels"
    try:
        value = json.loads(data) if allow_nan else json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise JsonError(deep, "", 0) from None
    except json.JSONDecodeError as exc:
        raise JsonError(exc.msg, exc.doc, exc.pos) from None
    except UnicodeDecodeError:
        raise JsonError("not UTF-8 text", "", 0) from None
    if isinstance(value, (dict, list)) and _too_deep(value, max_depth):
        raise JsonError(deep, "", 0)
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if re.search(_SURROGATE_ESCAPE, text) and _lone_surrogate(value):
        raise JsonError("a string holds a lone UTF-16 surrogate (half of a pair)", "", 0)
    return value


def load_json(path: Path | str, *, limit: int = MAX_INPUT_BYTES, follow: bool = True, what: str | None = None) -> object:
    """A whole JSON file, bounded in size and depth; :class:`InputError` with one line otherwise."""
    label = what or os.fspath(path)
    data = read_regular(path, limit=limit, follow=follow, what=label)
    try:
        return loads(data)
    except JsonError as exc:
        raise InputError(f"{label}: not valid JSON ({exc})") from None


def iter_lines(
    path: Path | str,
    *,
    limit: int = MAX_INPUT_BYTES,
    max_line: int = MAX_LINE_BYTES,
    max_lines: int = MAX_LINES,
    follow: bool = True,
    what: str | None = None,
) -> Iterator[tuple[int, bytes | None]]:
    """``(number, line)`` for each line of a regular file, its newline removed; ``None`` for a line
    longer than ``max_line`` (skipped without holding it in memory). Stops with :class:`InputError`
    past ``limit`` bytes or ``max_lines`` lines."""
    label = what or os.fspath(path)
    fd = _open_to_read(path, follow, label)
    total = 0
    with os.fdopen(fd, "rb", buffering=1024 * 1024) as handle:
        number = 0
        while True:
            try:
                line = handle.readline(max_line + 1)
            except OSError as exc:
                raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
            if not line:
                return
            number += 1
            total += len(line)
            if number > max_lines:
                raise InputError(f"{label}: more than {max_lines} lines; refused")
            if len(line) > max_line and not line.endswith(b"\n"):
                while True:  # skip the rest of an over-long line
                    rest = handle.readline(1024 * 1024)
                    total += len(rest)
                    if total > limit:
                        raise InputError(f"{label}: larger than {_mib(limit)}; refused")
                    if not rest or rest.endswith(b"\n"):
                        break
                yield number, None
                continue
            if total > limit:
                raise InputError(f"{label}: larger than {_mib(limit)}; refused")
            yield number, line.rstrip(b"\n")


def cap_text(text: str, limit: int = MAX_TEXT) -> tuple[str, int]:
    """``text`` cut in the middle to ``limit`` characters (head and tail kept), and how many were cut."""
    if len(text) <= limit:
        return text, 0
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}", cut


__all__ = [
    "MAX_ENTRIES",
    "MAX_FILE_BYTES",
    "MAX_INPUT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LINES",
    "MAX_LINE_BYTES",
    "MAX_TEXT",
    "InputError",
    "JsonError",
    "cap_text",
    "iter_lines",
    "kind_of",
    "load_json",
    "loads",
    "open_regular",
    "read_fd_bounded",
    "read_regular",
]
