"""Resolve a path the way the kernel will, so the policy vets what a command really opens.

Component by component, as ``namei`` does: ``..`` climbs from where the walk *is* (after every link
followed so far), not from the text, so ``/proc/self/root/../../root/.profile`` is ``/root/.profile``.
A relative path starts at ``/``, the working directory commands run in.

The ``/proc`` magic links are not names but objects, and are handled as the kernel does:

- ``/proc/self/root`` and ``/proc/self/cwd`` (also ``thread-self``) of the command itself are ``/``:
  commands run in rigaudit's own root with ``/`` as their working directory;
- the root or working directory of any other process (``/proc/PID/root``) is that process's view
  (a container's root: its links lead anywhere), and a process's ``exe``, ``fd/N``, ``map_files/*``
  and ``ns/*`` open the object itself, whatever name it shows: a path through them is **refused**;
  only the link itself may be named when it is not followed (``readlink /proc/1/exe``).

Every other link is read from the file system and followed (at most 40, as the kernel). A
resolution is **unstable** when someone untrusted could replace a name on the way (a directory
they can write): what was vetted is then not what will be opened, so the policy refuses it.
``/proc`` and ``/sys`` are made by the kernel and never unstable.
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.policy.fsview import ABSENT, DENIED, LEXICAL, FileSystem, Kind

MAX_HOPS = 40
_PID = r"[0-9]+|self|thread-self"
_SELF = frozenset({"self", "thread-self"})
_MAGIC_DIRS = frozenset({"fd", "map_files", "ns"})
_MAGIC_LINKS = frozenset({"root", "cwd", "exe"})


class Resolved(Record):
    """Where a path leads."""

    path: str
    """The resolved path (for a refused one, as far as the walk got)."""
    kind: Kind | None = None
    """The final entry's kind; ``None`` when it does not exist or could not be seen."""
    refused: str | None = None
    """Why the path cannot be resolved safely (a magic link, a loop, an unreadable link)."""
    unstable: str | None = None
    """Why what was resolved could change before it is opened."""
    hops: int = 0
    """Links followed."""


def _process_prefix(done: list[str]) -> int:
    """The length of the ``/proc/PID[/task/TID]`` prefix that ``done`` is exactly, or 0."""
    if len(done) == 2 and done[0] == "proc" and re.fullmatch(_PID, done[1]):
        return 2
    if len(done) == 4 and done[0] == "proc" and re.fullmatch(_PID, done[1]) and done[2] == "task" and done[3].isdigit():
        return 4
    return 0


def _magic(done: list[str], part: str) -> str | None:
    """``self`` (the command's own root or cwd, which is ``/``), ``foreign`` (any other magic link), or ``None``."""
    if _process_prefix(done) and part in _MAGIC_LINKS:
        return "self" if done[1] in _SELF and part != "exe" else "foreign"
    if len(done) >= 3 and _process_prefix(done[:-1]) and done[-1] in _MAGIC_DIRS:
        return "foreign"
    return None


def _join(parts: list[str]) -> str:
    return "/" + "/".join(parts)


def _pseudo(parts: list[str]) -> bool:
    return bool(parts) and parts[0] in ("proc", "sys")


def resolve(path: str, fs: FileSystem = LEXICAL, *, follow_final: bool = True) -> Resolved:
    """Resolve ``path`` on ``fs``; ``follow_final=False`` leaves a final link unfollowed (``lstat``, ``readlink``)."""
    if path.endswith(("/", "/.")):
        follow_final = True  # a trailing slash makes the kernel follow the last link too
    todo = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0
    unstable: str | None = None
    blind = ""  # the first name whose kind could not be seen: what follows is taken as written
    kind: Kind | None = "dir"
    while todo:
        part = todo.pop(0)
        if part == "..":
            if blind:
                return Resolved(_join(done), refused=f"'..' after {blind}, which cannot be looked into, cannot be resolved")
            if done:
                done.pop()
            kind = "dir"
            continue
        here = _join([*done, part])
        last = not todo
        if done == ["proc"] and part in _SELF:
            done.append(part)  # the command's own process, whoever vets it: never read as rigaudit's pid
            kind = "dir"
            continue
        magic = _magic(done, part)
        if magic is not None:
            if last and not follow_final:
                done.append(part)
                kind = "link"
                break
            if magic == "foreign":
                return Resolved(here, refused=_foreign_reason(here, part))
            hops += 1
            done = []
            kind = "dir"
            continue
        if blind or kind is None:
            done.append(part)  # below something unseen or absent: as written (it cannot be opened now either)
            continue
        if unstable is None and not _pseudo(done):
            why = fs.untrusted(_join(done), here)
            if why is not None:
                unstable = f"{_join(done)} is {why}, who could swap {here} after it was vetted"
        entry = fs.lookup(here)
        if entry == DENIED:
            blind = here
            kind = None
            done.append(part)
            continue
        if entry == ABSENT:
            kind = None
            done.append(part)
            continue
        assert not isinstance(entry, str)
        if entry.kind == "link" and (follow_final or not last):
            target = fs.readlink(here)
            hops += 1
            if target is None:
                return Resolved(here, refused=f"{here} is a link that cannot be read")
            if hops > MAX_HOPS:
                return Resolved(here, refused=f"{here}: too many levels of links")
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p not in ("", ".")] + todo
            kind = "dir"
            continue
        done.append(part)
        kind = entry.kind
    return Resolved(_join(done), kind=None if blind else kind, unstable=unstable, hops=hops)


def _foreign_reason(here: str, part: str) -> str:
    if part in ("root", "cwd"):
        return f"{here} is another process's root or working directory: what follows is resolved in its view"
    return f"{here} is a process's open file, executable or namespace: the kernel opens the object, whatever its name says"
