"""The node's side of a fleet audit: ``rigaudit snapshot --stdout``.

Records this machine exactly as ``rigaudit snapshot -o DIR`` does, into a private temporary folder,
then writes it to stdout as a gzip'd tar stream (the wire format: see tools/remote/tarstream.py)
and removes the folder. Warnings go to stderr as ``rigaudit: warning: ...`` lines, which the
coordinator keeps with the host's result.

Testing and demo hook: with ``RIGAUDIT_SNAPSHOT_SOURCE=DIR`` in its environment the command streams
the prepared snapshot DIR instead of recording the machine (namespace test fleets, demos).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

from rigaudit.tools.core.errors import OperationError, UsageError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.hosts.snapshot import SnapshotError, load_manifest
from rigaudit.tools.remote.tarstream import write_snapshot_tar

SOURCE_ENV = "RIGAUDIT_SNAPSHOT_SOURCE"


def _stream(root: Path) -> None:
    out = sys.stdout.buffer
    if out.isatty():
        raise UsageError("--stdout writes a binary tar stream: redirect it (rigaudit snapshot --stdout > node.tar.gz)")
    try:
        write_snapshot_tar(root, out)
        out.flush()
    except BrokenPipeError:
        raise OperationError("the reader of the snapshot stream went away") from None


def snapshot_to_stdout(*, notes: str = "", concurrency: int = 8) -> int:
    """Record this machine (or stream ``$RIGAUDIT_SNAPSHOT_SOURCE``) as a tar stream on stdout."""
    prepared = os.environ.get(SOURCE_ENV)
    if prepared:
        try:
            load_manifest(Path(prepared))
        except SnapshotError as exc:
            raise SnapshotError(f"{SOURCE_ENV}: {exc}") from None
        _stream(Path(prepared))
        return 0
    from rigaudit.orchestrator.hosts.snapshots import record_snapshot

    with tempfile.TemporaryDirectory(prefix="rigaudit-snapshot-") as scratch:
        target = Path(scratch) / "snapshot"
        recorded = anyio.run(lambda: record_snapshot(target, notes=notes, concurrency=concurrency))
        for warning in recorded.warnings():
            print(f"rigaudit: warning: {printable(warning)}", file=sys.stderr)
        _stream(target)
    return 0
