"""The Host protocol and the result types its operations return.

Reads never raise: a missing file, a refused command or a failing NVML call is a result
with ``error`` set, so an investigator can turn it into an ``unknown`` finding.
Writes raise :class:`HostWriteError`, because a change that did not happen must stop the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record

JsonValue = object
"""A JSON value as decoded by :mod:`json` (number, string, list, dict, bool, None)."""

NOT_RECORDED = "not recorded in this snapshot"


class FileResult(Record):
    """The bytes of a file, or why they could not be read (``ENOENT``, ``EACCES``, ...)."""

    path: str
    data: bytes | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.data is not None

    def text(self) -> str | None:
        return None if self.data is None else self.data.decode("utf-8", errors="replace")


class DirResult(Record):
    """The entry names of a directory (sorted), or why it could not be listed."""

    path: str
    entries: tuple[str, ...] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.entries is not None


class CommandResult(Record):
    """The outcome of one command.

    ``error`` is ``not_found``, ``timeout``, ``denied``, ``failed_to_start`` or
    ``not_recorded``; with it set, ``exit_code`` may be ``None``.
    ``truncated`` counts the bytes of output cut from the middle by the output cap.
    """

    argv: tuple[str, ...]
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: str | None = None
    truncated: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_code == 0


class NvmlResult(Record):
    """The outcome of one NVML call, named as in the C API.

    ``value`` is JSON-shaped (structs as dicts of field names). ``error`` is the NVML
    return code without its ``NVML_ERROR_`` prefix (``NOT_SUPPORTED``, ``NO_PERMISSION``,
    ``LIBRARY_NOT_FOUND``...), or ``NOT_RECORDED`` for a snapshot that lacks the call.
    """

    fn: str
    args: tuple[int, ...]
    value: JsonValue = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class HostWriteError(OperationError):
    """A write to the host failed; the message says which path and why."""


@runtime_checkable
class Host(Protocol):
    """A machine, live or recorded. Paths are absolute; argv is never a shell string."""

    @property
    def name(self) -> str: ...

    @property
    def source(self) -> str:
        """``local``, ``snapshot:DIR``, ``ssh:HOST``: where the evidence comes from."""
        ...

    async def read(self, path: str) -> FileResult: ...

    async def list_dir(self, path: str) -> DirResult: ...

    async def readlink(self, path: str) -> str | None: ...

    async def exists(self, path: str) -> bool: ...

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult: ...

    async def nvml(self, fn: str, *args: int) -> NvmlResult: ...

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        """Write ``data`` to ``path`` (at ``offset`` for register files such as PCI config)."""
        ...

    async def aclose(self) -> None: ...


def answers_at_once(host: Host) -> bool:
    """Whether every operation of ``host`` completes without waiting (a snapshot read with no added latency).

    A host says so with an ``answers_at_once`` attribute; hosts without one may wait (a live machine, SSH).
    The probe runs the reads of such a host one after another: overlapping them buys nothing and a task per
    read cost more than the reads themselves (an archetype audit: 0.48 s of CPU with tasks, 0.21 s without).
    """
    return getattr(host, "answers_at_once", False) is True
