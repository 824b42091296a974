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


def _names(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


class _Walk:
    """A resolution under way: the names left and walked, links followed, and what made it unstable or blind.

    Each step takes the next name and returns a refusal, or ``None`` to go on."""

    def __init__(self, path: str, fs: FileSystem, follow_final: bool) -> None:
        self.fs = fs
        self.follow_final = follow_final or path.endswith(("/", "/."))  # a trailing slash: the last link followed too
        self.todo = _names(path)
        self.done: list[str] = []
        self.hops = 0
        self.unstable: str | None = None
        self.blind = ""  # the first name whose kind could not be seen: what follows is taken as written
        self.kind: Kind | None = "dir"

    def step(self) -> Resolved | None:
        part = self.todo.pop(0)
        if part == "..":
            return self._climb()
        here = _join([*self.done, part])
        if self.done == ["proc"] and part in _SELF:
            self.done.append(part)  # the command's own process, whoever vets it: never read as rigaudit's pid
            self.kind = "dir"
            return None
        magic = _magic(self.done, part)
        if magic is not None:
            return self._magic_link(part, here, magic)
        if self.blind or self.kind is None:
            self.done.append(part)  # below something unseen or absent: as written (it cannot be opened now either)
            return None
        self._vet_stability(here)
        return self._look_up(part, here)

    def _climb(self) -> Resolved | None:
        """``..``: up from where the walk is; refused below a name that could not be looked into."""
        if self.blind:
            return Resolved(_join(self.done), refused=f"'..' after {self.blind}, which cannot be looked into, cannot be resolved")
        if self.done:
            self.done.pop()
        self.kind = "dir"
        return None

    def _magic_link(self, part: str, here: str, magic: str) -> Resolved | None:
        """A ``/proc`` magic link: named itself when it is last and not followed, refused when it leads into another
        process's view or an object, else the command's own ``/``."""
        if not self.todo and not self.follow_final:
            self.done.append(part)
            self.kind = "link"
            return None
        if magic == "foreign":
            return Resolved(here, refused=_foreign_reason(here, part))
        self.hops += 1
        self.done = []
        self.kind = "dir"
        return None

    def _vet_stability(self, here: str) -> None:
        """The first directory on the way that someone untrusted could change makes the resolution unstable."""
        if self.unstable is None and not _pseudo(self.done):
            why = self.fs.untrusted(_join(self.done), here)
            if why is not None:
                self.unstable = f"{_join(self.done)} is {why}, who could swap {here} after it was vetted"

    def _look_up(self, part: str, here: str) -> Resolved | None:
        """The name on the file system: unseen, absent, a link to follow (its target's names go first), or walked."""
        entry = self.fs.lookup(here)
        if entry in (DENIED, ABSENT):
            if entry == DENIED:
                self.blind = here
            self.kind = None
            self.done.append(part)
            return None
        assert not isinstance(entry, str)
        if entry.kind == "link" and (self.follow_final or self.todo):
            return self._follow(here)
        self.done.append(part)
        self.kind = entry.kind
        return None

    def _follow(self, here: str) -> Resolved | None:
        target = self.fs.readlink(here)
        self.hops += 1
        if target is None:
            return Resolved(here, refused=f"{here} is a link that cannot be read")
        if self.hops > MAX_HOPS:
            return Resolved(here, refused=f"{here}: too many levels of links")
        if target.startswith("/"):
            self.done = []
        self.todo = _names(target) + self.todo
        self.kind = "dir"
        return None


def resolve(path: str, fs: FileSystem = LEXICAL, *, follow_final: bool = True) -> Resolved:
    """Resolve ``path`` on ``fs``; ``follow_final=False`` leaves a final link unfollowed (``lstat``, ``readlink``)."""
    walk = _Walk(path, fs, follow_final)
    while walk.todo:
        if (refused := walk.step()) is not None:
            return refused
    return Resolved(_join(walk.done), kind=None if walk.blind else walk.kind, unstable=walk.unstable, hops=walk.hops)


def _foreign_reason(here: str, part: str) -> str:
    if part in ("root", "cwd"):
        return f"{here} is another process's root or working directory: what follows is resolved in its view"
    return f"{here} is a process's open file, executable or namespace: the kernel opens the object, whatever its name says"
