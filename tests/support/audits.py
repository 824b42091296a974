"""The full audit of a generated host, made once per test session and shared by every test file that needs it.

Under pytest-xdist the workers share one folder of the session's temporary base (set by tests/conftest.py): the
first worker to audit a host writes the result there as JSON and the others read it back (the round trip is exact:
it is checked when written). Results are shared: read them, never change them.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec

_DONE: dict[HostSpec, AuditResult] = {}
_SHARED: list[Path] = []


def share_with_workers(folder: Path) -> None:
    """Keep results in ``folder`` too, where the session's other workers find them."""
    folder.mkdir(parents=True, exist_ok=True)
    _SHARED[:] = [folder]


def audited(spec: HostSpec) -> AuditResult:
    """The full audit of ``spec``'s snapshot (tests/hostgen/cache.py), once per session. Read only."""
    if spec not in _DONE:
        _DONE[spec] = _shared(spec) or _audit(spec)
    return _DONE[spec]


def _file(spec: HostSpec) -> Path | None:
    if not _SHARED:
        return None
    return _SHARED[0] / f"{hashlib.sha256(repr(spec).encode()).hexdigest()[:24]}.json"


def _shared(spec: HostSpec) -> AuditResult | None:
    path = _file(spec)
    if path is None or not path.is_file():
        return None
    return AuditResult.model_validate_json(path.read_bytes())


def _audit(spec: HostSpec) -> AuditResult:
    result = anyio.run(lambda: run_audit(SnapshotHost(snapshot(spec))))
    path = _file(spec)
    if path is not None:
        text = result.model_dump_json()
        assert AuditResult.model_validate_json(text) == result, f"{spec.name}: its audit does not survive JSON"
        fd, scratch = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(scratch, path)
    return result
