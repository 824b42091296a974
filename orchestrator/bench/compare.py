"""Comparing benchmark sessions, and calibrating the noise between sessions, as work.

``compare_runs`` judges one or more sessions a side, adding the between-session noise of a stored
calibration of the host and workload when one applies (or the one named), and saying in its
headline where that noise came from; ``run_calibration`` measures it: K sessions of one load, each
in a fresh process (as a before and an after run are), or K result files read, and stores it in
the state directory. Neither prints: results and warnings are events, ``--json`` and the report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import NormalDist

from rigaudit.orchestrator.bench.run import Approve, Outputs, _publish, reach_server
from rigaudit.tools.bench.calibration import (
    Calibration,
    by_name_warning,
    calibrate,
    container_warning,
    find,
    load_calibration,
    mismatch,
    save,
    stored,
)
from rigaudit.tools.bench.compare import Comparison, Settings, compare
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.integrity import problems
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.power import POWER, detectable, headline_share
from rigaudit.tools.bench.render import COMPARE_LEGEND, compare_table, section
from rigaudit.tools.bench.render_calibration import calibration_table, stored_table
from rigaudit.tools.bench.results import BenchResult, load_result
from rigaudit.tools.bench.stats import growth
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.files.bounded import InputError
from rigaudit.tools.schema.events.session import Output, Progress, Warning_
from rigaudit.tools.schema.events.sink import EventSink

__all__ = ["CalibrationRun", "CompareRun", "compare_runs", "list_calibrations", "run_calibration"]

NO_OUTPUTS = Outputs()
MAX_FILES = 1000
MAX_SESSIONS = 100
MAX_GAP_S = 3600.0


def _paths(side: Path | Sequence[Path]) -> tuple[Path, ...]:
    return (side,) if isinstance(side, Path) else tuple(side)


class CompareRun(Record):
    """Sessions a side (one file each); the between-session noise from ``calibration``, else the stored one."""

    base: Path | Sequence[Path]
    new: Path | Sequence[Path]
    settings: Settings = field(default_factory=Settings)
    allow_different: bool = False
    """Compare results of different workloads anyway, listing the differences."""
    calibration: Path | None = None
    """A calibration file to use; None: the stored calibration of the results' host and workload, if any."""
    use_stored: bool = True
    """Look for a stored calibration (``--no-calibration``: do not)."""


def _names(paths: Sequence[Path], *, full: bool) -> str:
    shown = [str(p) if full else p.name for p in paths]
    return shown[0] if len(shown) == 1 else f"{shown[0]} (+{len(shown) - 1} sessions)"


def _calibration(run: CompareRun, first: BenchResult, emit: EventSink) -> tuple[Calibration | None, Path | None]:
    if run.settings.session_cv is not None:
        return None, None
    if run.calibration is not None:
        named = load_calibration(run.calibration)
        differs = mismatch(named, first)
        if differs:
            raise UsageError(f"the calibration {run.calibration} is of another host or workload: {'; '.join(differs)}")
        return named, run.calibration
    if not run.use_stored:
        return None, None
    try:
        found = find(first)
    except (BenchInputError, InputError) as exc:
        emit(Warning_(text=f"the stored calibration cannot be used ({exc}): compared as if none; run bench calibrate again"))
        return None, None
    if found is None:
        return None, None
    if found.warning:
        emit(Warning_(text=found.warning))
    return found.calibration, found.path


def compare_runs(run: CompareRun, *, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> Comparison:
    """Compare sessions of ``rigaudit.bench/1`` results, repeats and sessions as the units: a real gain, or noise?"""
    bases, news = _paths(run.base), _paths(run.new)
    if not bases or not news or len(bases) + len(news) > MAX_FILES:
        raise UsageError(f"bench compare wants 1 to {MAX_FILES} result files a side")
    base = [load_result(p) for p in bases]
    new = [load_result(p) for p in news]
    for path, loaded in zip((*bases, *news), (*base, *new), strict=True):
        if found := problems(loaded):
            raise BenchInputError(f"{path}: {'; '.join(found)}: refusing to compare it")
    calibration, where = _calibration(run, base[0], emit)
    result = compare(
        base,
        new,
        run.settings,
        allow_different=run.allow_different,
        calibration=calibration,
        calibration_path=str(where) if where else None,
    )
    emit(Output(text=compare_power(result, calibration, (len(base), len(new)), run.settings)))
    if calibration is not None and (age := calibration.age_days()) is not None and age > 30:
        emit(Warning_(text=f"the calibration is {age:.0f} days old: machines and servers change; run bench calibrate again"))
    table = compare_table(result)
    reasons = [
        f"concurrency {level.concurrency}: {level.headline.label}: {level.headline.reason}"
        for level in result.levels
        if level.headline.reason
    ]
    method = f"method: {result.method}; {COMPARE_LEGEND}"
    between = [result.between.text] if result.between else []
    shown = [] if result.between is None or result.between.mode == "default" else between  # the warning says it
    mode = f" ({result.between.short})" if result.between else ""
    _publish(
        emit,
        outputs,
        kind="compare",
        text=json.dumps(result.to_dict(), indent=2),
        section_title="Benchmark comparison",
        tables=[(f"{_names(bases, full=True)} → {_names(news, full=True)}{mode}", table)],
        markdown=section(
            f"{_names(bases, full=False)} → {_names(news, full=False)}", table, [*between, *reasons, *result.warnings, method]
        ),
        notes=[*shown, *reasons, method],
    )
    if result.between is not None and result.between.mode == "default":
        emit(Warning_(text=result.between.text))
    for warning in result.warnings:
        emit(Warning_(text=warning))
    return result


def compare_power(result: Comparison, calibration: Calibration | None, sessions: tuple[int, int], settings: Settings) -> str:
    """What these sessions a side can detect (80% of the time), at the spread between sessions it judges with."""
    if settings.session_cv is not None:
        cv, source = settings.session_cv, "--session-cv"
    elif calibration is not None and calibration.headline_cv():
        cv, source = max(calibration.headline_cv().values()), "calibrated, the widest level"
    elif result.between is not None and result.between.mode == "sessions" and result.between.session_cv:
        cv, source = max(result.between.session_cv.values()), "from the sessions compared, the widest level"
    else:
        cv, source = settings.default_session_cv, "assumed: not calibrated"
    units = min(sessions)
    share = headline_share(settings.alpha, max(1, len(result.levels)))
    if units >= 2:
        found = detectable(cv, units, alpha=share, paired=False)
    else:  # one session a side: the spread is not estimated from them, so the normal quantiles apply
        found = growth((NormalDist().inv_cdf(1 - share / 2) + NormalDist().inv_cdf(POWER)) * math.sqrt(2.0) * cv)
    said = f"about {found:.0%}" if found is not None else "nothing"
    return (
        f"power: {sessions[0]} vs {sessions[1]} session(s), spread between sessions {cv:.1%} ({source}): this comparison "
        f"resolves changes of output tok/s of {said} (found 80% of the time); more sessions a side resolve less"
    )


# --- calibrate -------------------------------------------------------------------------------------


class CalibrationRun(Record):
    """Sessions of one configuration: run (``spec``, ``sessions`` of them) or read (``files``)."""

    files: tuple[Path, ...] = ()
    spec: LoadSpec | None = None
    sessions: int = 8
    gap_s: float = 0.0
    """Seconds between the sessions it runs (a before and an after run are often minutes apart)."""
    keep: Path | None = None
    """A folder to write each session's result to (``session-01.json``, ...)."""
    save: bool = True
    """Store the calibration where ``bench compare`` looks for it."""
    settings: Settings = field(default_factory=Settings)


def run_sessions(
    spec: LoadSpec, count: int, gap_s: float, emit: EventSink, label: str, keep: Callable[[int, BenchResult], None] | None = None
) -> list[BenchResult]:
    """``count`` sessions of ``spec``, each in a fresh process (new connections), ``gap_s`` apart; ``keep`` gets each."""
    import anyio

    from rigaudit.tools.bench.session_process import run_session

    timeout = spec.timeout_s * max(1, spec.total_requests(spec.repeat)) + 120.0

    async def sessions() -> list[BenchResult]:
        results = []
        for index in range(count):
            if index and gap_s:
                await anyio.sleep(gap_s)
            emit(Progress(label=label, done=index, total=count))
            result = await run_session(spec, timeout_s=timeout)
            if result.runs and all(r.requests_ok == 0 for r in result.runs):
                errors = sorted({s.error.split(":")[0] for r in result.runs for s in r.samples if s.error})
                raise BenchInputError(f"every request of session {index + 1} failed ({', '.join(errors) or 'no answer'})")
            results.append(result)
            if keep is not None:
                keep(index, result)
        emit(Progress(label=label, done=count, total=count))
        return results

    return anyio.run(sessions)


def _keep(folder: Path, index: int, result: BenchResult) -> None:
    from rigaudit.orchestrator.report.output import write_json

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write {folder}: {exc.strerror or exc}") from None
    write_json(folder / f"session-{index + 1:02d}.json", result.to_json())


def _calibration_sessions(run: CalibrationRun, approve: Approve, emit: EventSink) -> tuple[list[BenchResult], list[str]]:
    """The sessions to calibrate and where each came from: result files read, or sessions run once approved."""
    if run.files:
        if len(run.files) > MAX_FILES:
            raise UsageError(f"bench calibrate reads at most {MAX_FILES} result files")
        return [load_result(p) for p in run.files], [str(p) for p in run.files]
    if run.spec is None:
        raise UsageError("bench calibrate needs result files, or --base-url and --model to run sessions")
    spec = run.spec
    if not 2 <= run.sessions <= MAX_SESSIONS or not 0 <= run.gap_s <= MAX_GAP_S:
        raise UsageError(f"--sessions wants 2 to {MAX_SESSIONS} and --gap-s 0 to {MAX_GAP_S:g}")
    reach_server(spec, emit)
    approve(
        f"send {run.sessions * spec.total_requests(spec.repeat)} streaming requests to {spec.base_url} "
        f"in {run.sessions} sessions",
        [
            f"{run.sessions} identical sessions, each a fresh process as a before or an after run is: model "
            f"{spec.model}, {spec.api} API, concurrency {','.join(map(str, spec.concurrency))}, {spec.repeat} "
            f"repeat(s), {spec.prompt_tokens} prompt / {spec.max_tokens} output tokens each",
            "a production server serves these requests alongside its real traffic",
        ],
    )
    folder = run.keep
    keep = (lambda index, result: _keep(folder, index, result)) if folder is not None else None
    results = run_sessions(spec, run.sessions, run.gap_s, emit, "calibration sessions", keep)
    return results, [f"session {i + 1}" for i in range(len(results))]


def _calibration_notes(calibration: Calibration, where: Path | None) -> list[str]:
    """What the calibration is, where it is stored, what its session CV means, and whether it has sessions enough."""
    notes = [
        calibration.describe(),
        f"stored as {where}: bench compare of this host and workload adds it to every interval"
        if where
        else "not stored (--no-save): name it with bench compare --calibration FILE",
        "session CV: the spread between sessions that repeats inside a session cannot see (ANOVA of the sessions, "
        "0 when the sessions agree as well as their repeats); one session a side: the smallest change a compare of "
        "one session against one can tell from noise, whatever its repeats",
    ]
    if calibration.sessions < 6:
        notes.append(
            f"only {calibration.sessions} sessions: its intervals rest on {calibration.sessions - 1} degrees of freedom; "
            "8 or more are better"
        )
    return notes


def run_calibration(run: CalibrationRun, *, approve: Approve, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> Calibration:
    """Measure the between-session noise of one host and workload; store it (unless ``save`` is off) and report it."""
    results, sources = _calibration_sessions(run, approve, emit)
    calibration = calibrate(results, sources=sources)
    if not calibration.host_id:
        why = "the sessions record no machine-id (results written before rigaudit recorded one, or no /etc/machine-id)"
        emit(Warning_(text=by_name_warning(calibration.host, why)))
    if (unusable := container_warning(calibration)) is not None:
        emit(Warning_(text=unusable))
    where = save(calibration) if run.save else None
    table = calibration_table(calibration, run.settings)
    notes = _calibration_notes(calibration, where)
    _publish(
        emit,
        outputs,
        kind="calibrate",
        text=calibration.to_json(),
        section_title="Benchmark calibration",
        tables=[(f"Between-session noise: {calibration.workload.get('model')} at {calibration.workload.get('URL')}", table)],
        markdown=section(f"Calibration ({calibration.created_at})", table, notes),
        notes=notes,
    )
    return calibration


def list_calibrations(*, emit: EventSink, outputs: Outputs = NO_OUTPUTS) -> int:
    """Report the stored calibrations (newest first); how many there are."""
    found = stored()
    table = stored_table(found)
    _publish(
        emit,
        outputs,
        kind="calibrations",
        text=json.dumps(
            [{"path": str(p), **(c.model_dump(by_alias=True) if isinstance(c, Calibration) else {"error": c})} for p, c in found],
            indent=2,
        ),
        section_title="Benchmark calibration",
        tables=[("Stored calibrations", table)],
        markdown=section("Stored calibrations", table),
        notes=[] if found else ["no calibration stored yet: rigaudit bench calibrate --base-url URL --model M ... --yes"],
    )
    return len(found)
