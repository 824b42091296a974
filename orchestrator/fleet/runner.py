"""Run a fleet audit: collect every node (bounded, time-limited), audit each snapshot here, compare.

Collection holds one of ``max_connections`` slots per node for at most ``host_timeout_s``;
auditing (unpack, audit, fingerprint, per-host files) runs in worker processes as each snapshot
arrives, so a slow node delays only itself. A node that cannot be reached or fails is a
:class:`HostFailure` with its error; the others complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import anyio

from rigaudit.orchestrator.fleet.analysis import fleet_finished, fleet_result
from rigaudit.orchestrator.fleet.defaults import DEFAULT_HOST_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS
from rigaudit.orchestrator.fleet.pool import AuditPool
from rigaudit.orchestrator.fleet.result import FailureStage, FleetResult, HostAudit
from rigaudit.orchestrator.fleet.worker import AuditJob, AuditOutcome, audit_job
from rigaudit.orchestrator.hosts.snapshots import collect_all
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.tree import held_folder
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.recording import RecordingHost
from rigaudit.tools.remote.client import RemoteHost
from rigaudit.tools.remote.framing import NodeStream
from rigaudit.tools.remote.session import DEFAULT_MAX_ARCHIVE_BYTES, NodeError, collect_node
from rigaudit.tools.remote.slurm import SlurmJob, SrunOutcome, expand_nodelist, run_srun, task_argv
from rigaudit.tools.remote.transport import Collector, Transport, node_script
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.fleet import FleetStarted, HostAudited, HostCollected, HostConnecting, HostFailed, HostFailure
from rigaudit.tools.schema.events.sink import EventSink, discard


class FleetOptions(Record):
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    host_timeout_s: float = DEFAULT_HOST_TIMEOUT_S
    """Connection and collection of one node (over Slurm: the whole srun step)."""
    collector: Collector = "auto"
    node_rigaudit: str = "rigaudit"
    node_python: str = "python3"
    areas: tuple[str, ...] | None = None
    concurrency: int | None = None
    """Host operations in flight per audit (``None``: from the host's measured latency)."""
    """Host operations in flight within one host's audit."""
    timeout_s: float = 60.0
    """Per investigator, as for a single audit."""
    server_concurrency: int = 32
    """Operations in flight to one node's node server (hides the network's round trips)."""
    workers: int | None = None
    """Processes auditing snapshots; ``None``: one per CPU when there are three hosts or more, 0: in this process."""
    out: Path | None = None
    """Per-host folders (audit.json, system-improve.md, snapshot/); ``None``: snapshots in a temporary folder."""
    max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES


SLUG_CHARS = 64
"""The longest folder name for a host (a host name comes from a node's own result file: any length)."""


def slug(target: str) -> str:
    """A folder name for a host: ``root@gpu-7`` -> ``root@gpu-7``, ``ssh://a:22`` -> ``ssh_a_22``; a name longer than
    :data:`SLUG_CHARS` is cut and told apart by a digest of the whole (``AAAA...-1a2b3c4d5e6f``)."""
    name = re.sub(r"[^A-Za-z0-9@._-]+", "_", target).strip("._") or "host"
    if len(name) <= SLUG_CHARS:
        return name
    return name[: SLUG_CHARS - 13].rstrip("._-") + "-" + hashlib.sha256(target.encode("utf-8", "replace")).hexdigest()[:12]


def host_names(targets: Sequence[str]) -> dict[str, str]:
    """A distinct folder name for each target (distinct in any case too: ``gpu-01`` and ``GPU-01`` are two folders
    on a file system that folds case)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for target in targets:
        name = base = slug(target)
        number = 2
        while name.lower() in used:
            name, number = f"{base}-{number}", number + 1
        used.add(name.lower())
        names[target] = name
    return names


class _Place(Record):
    """Where one host's snapshot is unpacked (scratch, removed once audited) and its results go (``--out``)."""

    scratch: Path
    folder: Path | None

    @property
    def snapshot(self) -> Path:
        return self.scratch / "snapshot"

    def fresh(self) -> _Place:
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.mkdir(parents=True)
        if self.folder is not None:
            with held_folder(self.folder, 2):  # O/hosts/NAME made without following a link planted there
                pass
        return self


class _Places:
    def __init__(self, scratch: Path, out: Path | None) -> None:
        self.scratch, self.out = scratch, out
        self._names: dict[str, str] = {}

    def add(self, targets: Sequence[str]) -> None:
        known = list(self._names)
        self._names = host_names([*known, *[t for t in targets if t not in self._names]])

    def __getitem__(self, target: str) -> _Place:
        if target not in self._names:
            self.add([target])
        name = self._names[target]
        return _Place(self.scratch / name, self.out / "hosts" / name if self.out is not None else None)


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """Snapshots are small and short-lived: unpacked in RAM when there is /dev/shm."""
    shm = Path("/dev/shm")
    in_ram = shm.is_dir() and os.access(shm, os.W_OK)
    scratch = Path(tempfile.mkdtemp(prefix="rigaudit-fleet-", dir=shm if in_ram else None))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Run(Record, frozen=False):
    options: FleetOptions
    emit: EventSink
    kind: str
    pool: AuditPool | None
    """Worker processes; ``None``: audit in a thread of this process."""
    audits: dict[str, HostAudit] = field(default_factory=dict)
    failures: dict[str, HostFailure] = field(default_factory=dict)
    thread_limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))

    def fail(self, target: str, stage: FailureStage, error: str) -> None:
        self.failures[target] = HostFailure(target=target, stage=stage, error=error)
        self.emit(HostFailed(target=target, stage=stage, error=error))

    async def audit(self, job: AuditJob, *, mode: str, collect_s: float) -> None:
        started = time.perf_counter()
        audited: AuditOutcome
        if self.pool is not None:
            audited = await self.pool.audit(job)
        else:
            audited = await anyio.to_thread.run_sync(audit_job, job, limiter=self.thread_limiter)
        if audited.error is not None or audited.audit_json is None:
            self.fail(job.target, "audit", audited.error or "no result")
            return
        result = AuditResult.model_validate_json(audited.audit_json)
        seconds = time.perf_counter() - started
        folder = Path(job.host_dir) if job.host_dir is not None else None
        audit = HostAudit(job.target, mode, result, audited.fingerprint, collect_s, seconds, folder)
        self.audits[job.target] = audit
        self.emit(HostAudited(target=job.target, problems=audit.problems, seconds=seconds))

    def job(self, target: str, source: str, place: _Place, archive: bytes | None, warnings: Sequence[str] = ()) -> AuditJob:
        o = self.options
        return AuditJob(
            target=target,
            source=source,
            snapshot=str(place.snapshot),
            archive=archive,
            areas=o.areas,
            concurrency=o.concurrency,
            timeout_s=o.timeout_s,
            host_dir=str(place.folder) if place.folder is not None else None,
            warnings=tuple(warnings),
        )

    def result(self, targets: Sequence[str], started_at: str, started: float, warnings: Sequence[str] = ()) -> FleetResult:
        order = {t: i for i, t in enumerate(targets)}
        audits = sorted(self.audits.values(), key=lambda a: (order.get(a.target, len(order)), a.target))
        failures = sorted(self.failures.values(), key=lambda f: (order.get(f.target, len(order)), f.target))
        everyone = list(targets) + sorted(t for t in [*self.audits, *self.failures] if t not in order)
        return fleet_result(
            everyone,
            audits,
            failures,
            kind=self.kind,
            started_at=started_at,
            duration_s=time.perf_counter() - started,
            warnings=warnings,
        )


def _workers(options: FleetOptions, hosts: int) -> int:
    if options.workers is not None:
        return max(0, options.workers)
    return min(os.cpu_count() or 1, hosts) if hosts >= 3 and (os.cpu_count() or 1) > 1 else 0


async def _record_through_server(host: RemoteHost, target: Path, concurrency: int, warnings: list[str]) -> None:
    recording = RecordingHost(host)
    failures = await collect_all(Probe(recording, concurrency=concurrency))
    if host.client.lost is not None:
        return  # the session reports the lost connection
    summary = await recording.write_snapshot(
        target, hostname=host.name, notes=f"collected by a rigaudit fleet audit ({host.source})"
    )
    warnings.extend(f"collection failed for {f} (its evidence so far is kept)" for f in failures)
    warnings.extend(summary.warnings)


async def _collect_one(run: _Run, transport: Transport, target: str, place: _Place, limiter: anyio.CapacityLimiter) -> None:
    options = run.options
    source = transport.source(target)
    async with limiter:
        run.emit(HostConnecting(target=target))
        started = time.perf_counter()
        warnings: list[str] = []

        async def with_server(host: RemoteHost) -> None:
            await _record_through_server(host, place.snapshot, options.server_concurrency, warnings)

        async def attempt(collector: Collector) -> tuple[str, bytes | None, list[str]]:
            script = node_script(collector, rigaudit=options.node_rigaudit, python=options.node_python)
            got = await collect_node(
                transport.argv(target, script),
                source=source,
                with_server=with_server,
                max_archive_bytes=options.max_archive_bytes,
            )
            return got.mode, got.archive, got.warnings()

        try:
            place.fresh()
            with anyio.fail_after(options.host_timeout_s):
                try:
                    mode, archive, node_warnings = await attempt(options.collector)
                except NodeError as exc:
                    if not (options.collector == "auto" and exc.node_status == 2):
                        raise
                    # An older rigaudit without `snapshot --stdout`: send this one instead.
                    shutil.rmtree(place.snapshot, ignore_errors=True)
                    mode, archive, node_warnings = await attempt("server")
                    warnings.append(f"the node's rigaudit cannot stream snapshots ({exc}); used the node server")
        except TimeoutError:
            run.fail(target, "timeout", f"no snapshot within {options.host_timeout_s:g} s")
            return
        except NodeError as exc:
            run.fail(target, "connect" if exc.stage == "connect" else "collect", str(exc))
            return
        except OSError as exc:
            run.fail(target, "collect", f"cannot write the snapshot here: {exc.strerror or exc}")
            return
        except Exception as exc:  # one node's surprise must not end the fleet
            run.fail(target, "collect", f"{exc.__class__.__name__}: {str(exc).strip()[:300]}")
            return
        collect_s = time.perf_counter() - started
        size = len(archive) if archive is not None else 0
        run.emit(HostCollected(target=target, mode=mode, size_bytes=size, seconds=collect_s))
    await run.audit(run.job(target, source, place, archive, [*node_warnings, *warnings]), mode=mode, collect_s=collect_s)


async def run_fleet(
    targets: Sequence[str], transport: Transport, options: FleetOptions | None = None, emit: EventSink | None = None
) -> FleetResult:
    """Audit every target through ``transport`` (SSH, or a stand-in)."""
    options = options or FleetOptions()
    emit = emit or discard
    targets = list(dict.fromkeys(targets))
    started_at, started = _now(), time.perf_counter()
    workers = _workers(options, len(targets))
    run = _Run(options, emit, "ssh", AuditPool(workers) if workers else None)
    emit(FleetStarted(targets=list(targets), kind="ssh"))
    limiter = anyio.CapacityLimiter(max(1, options.max_connections))
    with _scratch() as scratch:
        places = _Places(scratch, options.out)
        places.add(targets)
        try:
            async with anyio.create_task_group() as group:
                for target in targets:
                    group.start_soon(_collect_one, run, transport, target, places[target], limiter)
        finally:
            if run.pool is not None:
                await run.pool.aclose()
    result = run.result(targets, started_at, started)
    emit(fleet_finished(result))
    return result


async def run_slurm_fleet(
    job: SlurmJob, options: FleetOptions | None = None, emit: EventSink | None = None, *, env: Mapping[str, str] | None = None
) -> FleetResult:
    """Audit the nodes of one ``srun --ntasks-per-node=1`` step (see tools/remote/slurm.py)."""
    options = options or FleetOptions()
    emit = emit or discard
    started_at, started = _now(), time.perf_counter()
    expected = await expand_nodelist(job.nodelist) if job.nodelist else []
    hosts = len(expected) or job.nodes or 1
    workers = _workers(options, hosts)
    run = _Run(options, emit, "slurm", AuditPool(workers) if workers else None)
    emit(FleetStarted(targets=list(expected), kind="slurm"))
    argv = job.argv(task_argv(options.node_rigaudit, options.node_python))
    with _scratch() as scratch:
        places = _Places(scratch, options.out)
        places.add(expected)
        seen: set[str] = set()

        async def on_node(stream: NodeStream) -> None:
            if stream.node in seen:
                run.fail(stream.node, "collect", "two tasks reported the same node name")
                return
            seen.add(stream.node)
            place = places[stream.node]
            seconds = time.perf_counter() - started
            if stream.error is not None or stream.exit_code != 0:
                said = [line for line in stream.stderr.splitlines() if line.strip()]
                why = stream.error or f"`rigaudit snapshot --stdout` failed (exit status {stream.exit_code})"
                run.fail(stream.node, "collect", why + (f": {said[-1].strip()[:300]}" if said else ""))
                return
            emit(HostCollected(target=stream.node, mode="slurm", size_bytes=len(stream.data), seconds=seconds))
            try:
                place.fresh()
            except OSError as exc:
                run.fail(stream.node, "audit", f"cannot unpack here: {exc.strerror or exc}")
                return
            node_warnings = [
                ln.strip().removeprefix("rigaudit: warning: ")
                for ln in stream.stderr.splitlines()
                if ln.startswith("rigaudit: warning:")
            ]
            job = run.job(stream.node, f"slurm:{stream.node}", place, stream.data, node_warnings)
            await run.audit(job, mode="slurm", collect_s=seconds)

        try:
            outcome = await run_srun(argv, on_node, timeout_s=options.host_timeout_s, env=env)
        finally:
            if run.pool is not None:
                await run.pool.aclose()
    warnings = _account_for_the_rest(run, outcome, expected, options.host_timeout_s) + _steps_without_gpus(run, job)
    result = run.result(expected, started_at, started, warnings)
    emit(fleet_finished(result))
    return result


STEP_SAW_NO_GPU = "NVML shows none of the node's"
"""What a node's ``job_step`` fact says when its srun step was given no GPU (agents/facts/baseline.py)."""
STEP_SAW_SOME = r"NVML shows (\d+) of the node's (\d+) GPU"
"""What it says when the step saw some of the node's GPUs: the others went unjudged."""


def _steps_without_gpus(run: _Run, job: SlurmJob) -> list[str]:
    """Warnings naming the nodes whose srun step saw none, or only some, of their GPUs (``ConstrainDevices=yes``
    and fewer GRES asked for than the node has): those GPUs' checks are unknown or went unjudged."""
    facts = {t: a.result.host.facts.get("job_step", "") for t, a in run.audits.items()}
    blind = sorted(t for t, fact in facts.items() if STEP_SAW_NO_GPU in fact)
    some = {t: m for t, fact in sorted(facts.items()) if (m := re.search(STEP_SAW_SOME, fact))}
    asked = ", and it asked for none" if job.gres is None else f" (--gres={job.gres})"
    warnings = []
    if blind:
        warnings.append(
            f"the srun step saw no GPU on {len(blind)} node(s) ({_some(blind)}): cgroup.conf's ConstrainDevices=yes lets "
            f"a step open only the GPUs it was given{asked}, so their GPU checks are unknown, not judged. Ask for the "
            "nodes' GPUs with --slurm-gres gpu:N (the step waits until they are free), or audit the nodes from the host "
            "with --hosts"
        )
    if some:
        named = [f"{t} {m.group(1)} of {m.group(2)}" for t, m in some.items()]
        warnings.append(
            f"the srun step judged only some GPUs on {len(some)} node(s) ({_some(named)}): a step opens only the GPUs "
            f"it was given{asked}, so the others went unjudged (their node counts as healthy for what was seen). Ask "
            "for every GPU of the node with --slurm-gres gpu:N, or audit the nodes from the host with --hosts"
        )
    return warnings


def _some(names: list[str]) -> str:
    return ", ".join(names[:8]) + (f" +{len(names) - 8} more" if len(names) > 8 else "")


def _account_for_the_rest(run: _Run, outcome: SrunOutcome, expected: list[str], timeout_s: float) -> list[str]:
    """After srun: fail every node expected or begun that reported nothing; warnings about srun itself."""
    warnings: list[str] = []
    said = [line.strip() for line in outcome.stderr.splitlines() if line.strip()]
    last = said[-1][:300] if said else ""
    reported = {*run.audits, *run.failures}
    for node in outcome.unfinished:
        if node not in reported:
            run.fail(
                node,
                "timeout" if outcome.timed_out else "collect",
                "its stream stopped before the end" + (f" ({last})" if last else ""),
            )
    for node in expected:
        if node not in reported and node not in outcome.unfinished:
            why = (
                f"no answer within {timeout_s:g} s"
                if outcome.timed_out
                else f"no stream from this node ({last or 'srun said nothing'})"
            )
            run.fail(node, "timeout" if outcome.timed_out else "collect", why)
    if not reported and not expected and not outcome.unfinished:
        warnings.append(f"srun ran no collection (exit status {outcome.exit_code}){': ' + last if last else ''}")
    elif outcome.exit_code not in (0, None) and last:
        warnings.append(f"srun exit status {outcome.exit_code}: {last}")
    return warnings
