"""RecordingHost: passes every operation to a host and keeps exactly what was read.

The recording replays through :class:`~tools.hosts.snapshot.SnapshotHost` with the same
answers: a read file is kept under its *resolved* path and every link met on the way is kept
in ``links.json`` (the snapshot resolves component by component, as sysfs does); ``EACCES`` and
other read errors go to ``unreadable.json``; ``ENOENT`` is kept as nothing at all (absent).
Entries of a listed directory that were never read are kept as links when they are links, and
otherwise as ``unreadable.json`` entries ``NOT_RECORDED``, so the listing replays whole and
reading them says "not recorded" rather than inventing content. Writes pass through, unrecorded.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, Host, NvmlResult, answers_at_once
from rigaudit.tools.hosts.links import link_walk
from rigaudit.tools.hosts.snapshot_writer import NOT_RECORDED_FILE, Recording, SnapshotSummary, write_snapshot

_ABSENT = frozenset({"ENOENT", "ENOTDIR", "ELOOP", "ENAMETOOLONG", "EINVAL"})
# /proc/PID/{root,cwd,exe,fd/N,...} are "magic" links (another mount namespace, a pipe): reading
# through them is not following a path, so resolution keeps them as plain components.
_MAGIC_LINK = re.compile(r"^/proc/[^/]+(?:/task/\d+)?/(?:root|cwd|exe|fd/[^/]+|map_files/[^/]+|ns/[^/]+)$")


class RecordingHost:
    """Wraps any :class:`Host`; ``await write_snapshot(dir, ...)`` writes what passed through."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.recording = Recording()
        self._link_cache: dict[str, str | None] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def source(self) -> str:
        return self.inner.source

    @property
    def answers_at_once(self) -> bool:
        """As the host it wraps (:func:`~tools.hosts.base.answers_at_once`)."""
        return answers_at_once(self.inner)

    # -- links ----------------------------------------------------------------------------

    async def _link(self, path: str) -> str | None:
        """The link at ``path`` (whose folder is already resolved), recorded when there is one."""
        if path not in self._link_cache:
            self._link_cache[path] = await self.inner.readlink(path)
        target = self._link_cache[path]
        if target is not None:
            self.recording.links[path] = target
        return target

    async def resolve(self, path: str) -> str:
        """Resolve links component by component on the inner host, exactly as SnapshotHost replays them."""
        walk = link_walk(path)
        try:
            candidate = next(walk)
            while True:
                target = None if _MAGIC_LINK.match(candidate) else await self._link(candidate)
                candidate = walk.send(target)
        except StopIteration as done:
            resolved: str = done.value
            return resolved

    # -- Host protocol --------------------------------------------------------------------

    async def read(self, path: str) -> FileResult:
        result = await self.inner.read(path)
        resolved = await self.resolve(path)
        rec = self.recording
        if result.data is not None:
            rec.files[resolved] = result.data
            rec.unreadable.pop(resolved, None)
        elif result.error == "EISDIR":
            rec.dirs.add(resolved)
        elif result.error not in _ABSENT and resolved not in rec.files:
            rec.unreadable[resolved] = result.error or "EIO"
        return result

    async def list_dir(self, path: str) -> DirResult:
        result = await self.inner.list_dir(path)
        if result.entries is not None:
            resolved = await self.resolve(path)
            self.recording.dirs.add(resolved)
            self.recording.listings[resolved] = result.entries
        return result

    async def readlink(self, path: str) -> str | None:
        target = await self.inner.readlink(path)
        parent, name = posixpath.split(posixpath.normpath(path))
        if target is not None and name:
            key = posixpath.join(await self.resolve(parent), name)
            self._link_cache[key] = target
            self.recording.links[key] = target
        return target

    async def exists(self, path: str) -> bool:
        found = await self.inner.exists(path)
        if found:
            self.recording.existing.add(await self.resolve(path))
        return found

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        result = await self.inner.run(argv, timeout_s=timeout_s)
        if result.error != "not_recorded":
            self.recording.commands[tuple(argv)] = result
        return result

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        result = await self.inner.nvml(fn, *args)
        if result.error != "NOT_RECORDED":
            self.recording.nvml[(fn, tuple(args))] = result
        return result

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        await self.inner.write(path, data, offset=offset)

    async def aclose(self) -> None:
        await self.inner.aclose()

    # -- snapshot -------------------------------------------------------------------------

    async def finalize(self, concurrency: int = 16) -> None:
        """Account for listed entries and ``exists`` answers that no read recorded."""
        rec = self.recording
        known = rec.known_paths()
        children = {posixpath.join(d, e) for d, entries in rec.listings.items() for e in entries}
        pending = sorted(p for p in children | rec.existing if p not in known)
        limiter = anyio.CapacityLimiter(max(1, concurrency))

        async def classify(path: str) -> None:
            async with limiter:
                target = await self._link(path)
            if target is None and path not in rec.unreadable:
                rec.unreadable[path] = NOT_RECORDED_FILE

        async with anyio.create_task_group() as group:
            for path in pending:
                group.start_soon(classify, path)

    async def write_snapshot(
        self, directory: Path | str, *, hostname: str | None = None, notes: str = "", force: bool = False
    ) -> SnapshotSummary:
        """Write the recording as a snapshot directory (atomically, secrets redacted)."""
        await self.finalize()
        return await write_snapshot(Path(directory), self.recording, hostname=hostname or self.name, notes=notes, force=force)
