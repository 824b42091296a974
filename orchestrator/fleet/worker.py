"""Audit one node's snapshot: unpack it, audit it, take its fingerprint, write its files.

Runs in worker processes (CPU-bound: parsing and rules), so a fleet's audits use every core;
:func:`audit_job` takes and returns plain data. The snapshot is unpacked in a scratch folder and removed
once audited; the host's own results go to its folder of ``--out``: ``audit.json``
(rigaudit.audit/1), ``system-improve.md`` and ``snapshot.tar.gz`` (the evidence, as it came).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.fleet.files import write_host_folder
from rigaudit.orchestrator.fleet.fingerprint import fingerprint
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost
from rigaudit.tools.redact import redact_json_text
from rigaudit.tools.remote.tarstream import ArchiveError, extract_snapshot_tar, snapshot_tar_bytes
from rigaudit.tools.schema.audit import AuditResult


class AuditJob(Record):
    target: str
    source: str
    """Where the evidence came from, as the result shows it (``ssh:HOST``, ``slurm:NODE``)."""
    snapshot: str
    """The snapshot folder: unpacked there from ``archive`` when one is given."""
    archive: bytes | None = None
    areas: tuple[str, ...] | None = None
    concurrency: int | None = None
    timeout_s: float = 60.0
    host_dir: str | None = None
    """Where audit.json, system-improve.md and snapshot.tar.gz go (``--out``); ``None``: results only."""
    warnings: tuple[str, ...] = ()


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


async def _audit(job: AuditJob) -> tuple[AuditResult, dict[str, str]]:
    host = SnapshotHost(job.snapshot)
    options = AuditOptions(concurrency=job.concurrency, areas=job.areas, timeout_s=job.timeout_s)
    result = await run_audit(host, options=options)
    facts = await fingerprint(host)
    summary = result.host.model_copy(update={"source": job.source})
    result = result.model_copy(update={"host": summary, "warnings": (*job.warnings, *result.warnings)})
    return result, facts


class AuditOutcome(Record):
    """What :func:`audit_job` sends back: the audit as JSON text and the fingerprint, or one error line."""

    audit_json: str | None
    fingerprint: dict[str, str]
    error: str | None = None


def audit_job(job: AuditJob) -> AuditOutcome:
    try:
        if job.archive is not None:
            extract_snapshot_tar(job.archive, Path(job.snapshot))
        result, facts = anyio.run(_audit, job)
    except (ArchiveError, SnapshotError) as exc:
        return AuditOutcome(None, {}, _error_line(exc))
    except Exception as exc:  # one host's bad evidence must not end the fleet
        return AuditOutcome(None, {}, f"audit failed: {exc.__class__.__name__}: {_error_line(exc)}")
    else:
        text = redact_json_text(result.model_dump_json(by_alias=True, indent=2))
        if job.host_dir is not None:
            folder = Path(job.host_dir)
            try:
                archive = job.archive if job.archive is not None else snapshot_tar_bytes(Path(job.snapshot))
                write_host_folder(folder, result, text, archive)
            except OSError as exc:
                return AuditOutcome(None, {}, f"cannot write {folder}: {exc.strerror or exc}")
            except UsageError as exc:  # a link in the folder, another machine's report there
                return AuditOutcome(None, {}, str(exc))
        return AuditOutcome(text, facts)
    finally:
        shutil.rmtree(job.snapshot, ignore_errors=True)
