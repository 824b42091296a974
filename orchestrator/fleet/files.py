"""One node's files in a fleet's output folder (``--out O``: ``O/hosts/NAME/``), written without following a link.

``hosts`` and ``NAME`` are opened from the folder above without following a link (:mod:`rigaudit.tools.files.tree`),
and a link among the files is refused: a link planted in ``O/hosts/`` cannot send a node's files elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from rigaudit.orchestrator.report.document import write_report
from rigaudit.tools.files.atomic import atomic_write_bytes, atomic_write_text
from rigaudit.tools.files.tree import held_folder, no_link
from rigaudit.tools.schema.audit import AuditResult

FILES = ("audit.json", "system-improve.md", "snapshot.tar.gz")


def write_host_folder(folder: Path, result: AuditResult, audit_json: str, archive: bytes | None = None) -> None:
    """``audit.json``, ``system-improve.md`` and (given) ``snapshot.tar.gz`` in ``folder`` (``O/hosts/NAME``).

    :class:`~rigaudit.tools.files.outputs.OutputRefused` for a link on the way, ``ReportRefused`` for another
    machine's report there, ``OSError`` when a file cannot be written."""
    with held_folder(folder, 2) as held:
        for name in FILES:
            no_link(held, name, folder)
        atomic_write_text(held / "audit.json", audit_json.rstrip("\n") + "\n", through=False)
        write_report(held / "system-improve.md", result)
        if archive is not None:
            atomic_write_bytes(held / "snapshot.tar.gz", archive)


__all__ = ["write_host_folder"]
