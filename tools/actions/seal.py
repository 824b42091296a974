"""A journal's seal: a keyed MAC over each entry, chained, with a key only its user can read.

A plan's hash is a digest anyone can recompute, so it cannot vouch for a journal. Each entry an apply
(or a rollback, or ``bench ab``) writes carries ``seal``: HMAC-SHA256, under this user's journal key, of
the seal before it and the entry's canonical JSON (sorted keys, no spaces, ASCII; the seal left out).
An entry edited, added, removed or moved breaks the chain, and only someone who can read the key can
make a new one. The key is 32 random bytes in ``$XDG_STATE_HOME/rigaudit/keys/journal.key`` (default
``~/.local/state``), made on first use with mode 0600 in a folder of mode 0700; it is used only while
it and its folder belong to this user (root: root) and no one else may read or write them
(:mod:`~rigaudit.tools.actions.custody`). A journal sealed under another key (another user, another
machine, a key removed) is not honoured.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from rigaudit.tools.actions.custody import file_problem, folder_problem
from rigaudit.tools.core.errors import UsageError

KEY_BYTES = 32
FIELD = "seal"


class SealError(UsageError):
    """The journal key cannot be made or used; the message is one line."""


def key_path() -> Path:
    """``$XDG_STATE_HOME/rigaudit/keys/journal.key`` (when absolute), else ``~/.local/state/rigaudit/keys/journal.key``.

    Only the seal makes ``keys/`` (mode 0700) and nothing else lives there: the folder above it holds transcripts
    too, made with the usual mode, which must not keep a first apply from making its key."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "rigaudit" / "keys" / "journal.key"


def _make(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return  # another apply made it first
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)


def load_key(*, create: bool) -> bytes:
    """This user's journal key; made first when ``create`` (an apply). :class:`SealError` with one line when
    it is missing, or not in this user's custody."""
    path = key_path()
    try:
        if create and not path.exists() and not path.is_symlink():
            if (problem := folder_problem(path.parent, private=True)) is not None and path.parent.exists():
                raise SealError(f"the journal key's folder cannot be trusted: {problem}")
            _make(path)
        problem = file_problem(path, private=True)
        if problem is not None:
            if not path.exists() and not path.is_symlink():
                raise SealError(f"no journal key at {path}: rigaudit keeps one for each user who applied a change")
            raise SealError(f"the journal key {path} cannot be trusted: {problem}")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            key = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SealError(f"the journal key {path}: {exc.strerror or exc}") from None
    if len(key) != KEY_BYTES:
        raise SealError(f"the journal key {path} is not {KEY_BYTES} bytes: remove it and apply again")
    return key


def canonical(entry: Mapping[str, object]) -> bytes:
    """The bytes an entry's seal covers: its JSON with sorted keys and no spaces, the seal left out."""
    value = {k: v for k, v in entry.items() if k != FIELD}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(key: bytes, previous: str, entry: Mapping[str, object]) -> str:
    """The seal of ``entry`` after the entry sealed ``previous`` (``""`` for the first)."""
    return _mac(key, previous, digest(entry))


def _mac(key: bytes, previous: str, entry_digest: bytes) -> str:
    return hmac.new(key, previous.encode("ascii", "replace") + b"\n" + entry_digest, hashlib.sha256).hexdigest()


def broken(key: bytes, entries: list[tuple[int, str, bytes]]) -> str | None:
    """Why the chain of ``(seq, seal, sha256 of canonical)`` does not hold under ``key`` (``None``: it holds)."""
    previous = ""
    for seq, sealed, entry_digest in entries:
        if not sealed:
            return f"entry {seq} carries no seal (written by an older rigaudit, or by hand)"
        if not hmac.compare_digest(_mac(key, previous, entry_digest), sealed):
            return f"entry {seq} does not carry its seal (edited, moved, or sealed under another user's or machine's key)"
        previous = sealed
    return None


def digest(entry: Mapping[str, object]) -> bytes:
    """What :func:`broken` compares for ``entry`` (its canonical JSON's SHA-256)."""
    return hashlib.sha256(canonical(entry)).digest()


__all__ = ["FIELD", "KEY_BYTES", "SealError", "broken", "canonical", "digest", "key_path", "load_key", "seal"]
