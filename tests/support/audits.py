"""The full audit of a generated host (or of a fixture snapshot), made once per test session and shared by every test
file that needs it.

Under pytest-xdist the workers share one folder of the session's temporary base (set by tests/conftest.py): the
first worker to audit a host writes the result there as JSON and the others read it back (the round trip is exact:
it is checked when written), with what the audit asked that the snapshot does not answer. Results are shared: read
them, never change them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.base import CommandResult, NvmlResult
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec

Snapshot = HostSpec | Path
"""A generated host (its snapshot is the session's: tests/hostgen/cache.py) or a snapshot folder (tests/fixtures)."""
_DONE: dict[Snapshot, tuple[AuditResult, frozenset[str]]] = {}
_SHARED: list[Path] = []


def share_with_workers(folder: Path) -> None:
    """Keep results in ``folder`` too, where the session's other workers find them."""
    folder.mkdir(parents=True, exist_ok=True)
    _SHARED[:] = [folder]


def audited(spec: Snapshot) -> AuditResult:
    """The full audit of ``spec``'s snapshot, once per session. Read only."""
    return _done(spec)[0]


def unanswered(spec: Snapshot) -> frozenset[str]:
    """What that audit asked and the snapshot does not answer: ``cmd:ARGV`` and ``nvml:FUNCTION`` (a real snapshot of
    the host would have recorded them)."""
    return _done(spec)[1]


def _done(spec: Snapshot) -> tuple[AuditResult, frozenset[str]]:
    if spec not in _DONE:
        _DONE[spec] = _shared(spec) or _audit(spec)
    return _DONE[spec]


class _Noting:
    """A SnapshotHost that notes the commands and NVML calls the snapshot does not answer."""

    def __init__(self, inner: SnapshotHost) -> None:
        self.inner = inner
        self.missing: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        result = await self.inner.run(argv, timeout_s=timeout_s)
        if result.error == "not_recorded":
            self.missing.add("cmd:" + " ".join(argv))
        return result

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        result = await self.inner.nvml(fn, *args)
        if result.error == "NOT_RECORDED":
            self.missing.add(f"nvml:{fn}")
        return result


def _file(spec: Snapshot) -> Path | None:
    if not _SHARED:
        return None
    key = repr(spec.resolve() if isinstance(spec, Path) else spec)
    return _SHARED[0] / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _shared(spec: Snapshot) -> tuple[AuditResult, frozenset[str]] | None:
    path = _file(spec)
    if path is None or not path.is_file():
        return None
    missing, text = path.read_bytes().split(b"\n", 1)
    return AuditResult.model_validate_json(text), frozenset(json.loads(missing))


def _audit(spec: Snapshot) -> tuple[AuditResult, frozenset[str]]:
    host = _Noting(SnapshotHost(spec if isinstance(spec, Path) else snapshot(spec)))
    result = anyio.run(lambda: run_audit(host))  # type: ignore[arg-type]
    path = _file(spec)
    if path is not None:
        text = result.model_dump_json()
        assert AuditResult.model_validate_json(text) == result, f"{spec.name}: its audit does not survive JSON"
        fd, scratch = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(sorted(host.missing)) + "\n" + text)  # the result's JSON holds no newline
        os.replace(scratch, path)
    return result, frozenset(host.missing)
