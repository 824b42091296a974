"""Where the time of a token goes, as work: a profiled benchmark (``bench inference --profile``) or a recorded one (``explain``).

A profile runs rigaudit's load against the server while the serving GPUs are sampled through the
host's NVML facade (read-only), then splits each level's measured time per output token into weight
and KV streaming, communication, GPU idle between kernels and the remainder
(:mod:`rigaudit.tools.bench.profile_attribution`), says which holds the gap and what kind of fix
moves it. ``explain FILE`` does the split again on a recorded profile, with the inputs corrected
where options are given. Results go out as events, ``--json`` (the ``rigaudit.bench/1`` result
with the profile under ``"profile"``) and the report's "Where the time goes" section. Nothing here
prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from rigaudit.orchestrator.bench.run import Approve, Outputs, publish_inference
from rigaudit.orchestrator.report.document import append_section
from rigaudit.orchestrator.report.output import write_json
from rigaudit.tools.bench.comm import ASSUMED_US, NcclCurve
from rigaudit.tools.bench.gpu_specs import lookup, unknown_message
from rigaudit.tools.bench.loadgen import REAL, Load, LoadSpec, reach
from rigaudit.tools.bench.model_spec import ModelSpec
from rigaudit.tools.bench.profile_inputs import DATASHEET_SHARE, CommInputs, ProfileInputs
from rigaudit.tools.bench.profile_render import (
    SECTION_TITLE,
    attribution_table,
    profile_notes,
    readings_table,
    where_the_time_goes,
)
from rigaudit.tools.bench.profile_result import Profile, attribute_all, load_profiled
from rigaudit.tools.bench.profile_sampler import GpuInfo, Sampler
from rigaudit.tools.bench.render import Table
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, replace
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.events.bench import BenchResultReported, BenchTable
from rigaudit.tools.schema.events.session import Progress, Warning_
from rigaudit.tools.schema.events.sink import EventSink

__all__ = [
    "CommOptions",
    "ProfileOptions",
    "explain_file",
    "run_profile",
]

MIN_INTERVAL_MS, MAX_INTERVAL_MS = 10, 10_000


class CommOptions(Record):
    curve: NcclCurve | None = None
    latency_us: tuple[float, float] | None = None
    interconnect: str | None = None
    per_layer: int = 2

    @property
    def given(self) -> bool:
        return self.curve is not None or self.latency_us is not None or self.interconnect is not None


class ProfileOptions(Record):
    """What a profile needs besides the load: which GPUs, the model, the layout, bandwidth and all-reduces."""

    interval_s: float = 0.1
    gpus: tuple[int, ...] | None = None
    """NVML indices; None: the GPUs with compute processes, else all."""
    tp: int | None = None
    """GPUs per model copy; None: every serving GPU."""
    model: ModelSpec | None = None
    bandwidth_gbs: float | None = None
    measure_bandwidth: bool = False
    comm: CommOptions = CommOptions()


def _layout(serving: int, tp: int | None) -> tuple[int, int]:
    tp = tp or max(1, serving)
    if serving and serving % tp:
        raise UsageError(f"--tp {tp} does not divide the {serving} serving GPUs into model copies")
    return tp, max(1, serving // tp) if serving else 1


def _comm(options: CommOptions, model: ModelSpec | None, tp: int) -> CommInputs | None:
    if tp <= 1 or model is None or model.layers is None:
        return None
    base = CommInputs(world=tp, layers=model.layers, per_layer=options.per_layer, hidden=model.hidden)
    if options.curve is not None:
        if options.curve.world != tp:
            raise UsageError(f"{options.curve.source} measured {options.curve.world} GPUs; the model runs on {tp} (--tp)")
        return base.model_copy(update={"curve": list(options.curve.rows), "source": options.curve.source})
    if options.latency_us is not None:
        return base.model_copy(update={"latency_us": options.latency_us, "source": "given (--allreduce-us)"})
    where = options.interconnect or "unknown"
    source = f"assumed, interconnect {where}; measure with bench nccl"
    return base.model_copy(update={"latency_us": ASSUMED_US[where], "source": source})


def _datasheet(infos: Sequence[GpuInfo]) -> tuple[float | None, str]:
    names = sorted({g.name for g in infos if g.name})
    specs = [lookup(name) for name in names]
    if not names:
        return None, "unknown: NVML named no GPU; give --bandwidth-gbs or --measure-bandwidth"
    if any(spec is None for spec in specs):
        missing = next(name for name, spec in zip(names, specs, strict=True) if spec is None)
        return None, unknown_message(missing, "--bandwidth-gbs or --measure-bandwidth")
    slowest = min((s for s in specs if s is not None), key=lambda s: s.bandwidth_gbs)
    return slowest.bandwidth_gbs * DATASHEET_SHARE, (
        f"{DATASHEET_SHARE:.0%} of the {slowest.bandwidth_gbs:,.0f} GB/s data-sheet peak of the {slowest.name}"
    )


def build_inputs(
    options: ProfileOptions,
    infos: Sequence[GpuInfo],
    context_tokens: float,
    *,
    measured: tuple[float, str] | None = None,
    base: ProfileInputs | None = None,
) -> ProfileInputs:
    """The inputs of the split: the options where given, else ``base`` (a recorded profile's), else derived."""
    model = options.model if options.model is not None else (base.model if base else None)
    if options.tp is not None or base is None:
        tp, replicas = _layout(len(infos), options.tp)
    else:
        tp, replicas = base.tp, base.replicas
    bandwidth: float | None
    if options.bandwidth_gbs is not None:
        bandwidth, source = options.bandwidth_gbs, "given (--bandwidth-gbs)"
    elif measured is not None:
        bandwidth, source = measured
    elif base is not None and base.bandwidth_gbs is not None:
        bandwidth, source = base.bandwidth_gbs, base.bandwidth_source
    else:
        found, source = _datasheet(infos)
        bandwidth = found
    notes: list[str] = []
    if bandwidth is None and model is not None:
        notes.append(f"streaming not attributed: {source}")
    if options.comm.given or base is None or options.model is not None or options.tp is not None:
        comm = _comm(options.comm, model, tp)
    else:
        comm = base.comm
    return ProfileInputs(
        model=model,
        tp=tp,
        replicas=replicas,
        context_tokens=context_tokens,
        bandwidth_gbs=bandwidth,
        bandwidth_source=source if bandwidth is not None else "",
        comm=comm,
        notes=notes,
    )


def _table(title: str, table: Table) -> BenchTable:
    headers, rows = table
    return BenchTable(title=title, headers=list(headers), rows=[list(r) for r in rows])


def _publish(profile: Profile, result: BenchResult, *, emit: EventSink, outputs: Outputs, title: str) -> None:
    notes = profile_notes(profile)
    emit(
        BenchResultReported(
            kind="profile",
            summary=SECTION_TITLE,
            data=profile.summary_dict(),
            tables=[
                _table(f"{title}: where the time of a token goes (ms per output token)", attribution_table(profile)),
                _table("The serving GPUs during each level (NVML)", readings_table(profile)),
            ],
            notes=notes,
        )
    )
    for warning in profile.warnings:
        emit(Warning_(text=warning))
    if outputs.json is not None:
        write_json(outputs.json, json.dumps({**json.loads(result.to_json()), "profile": profile.to_dict()}, indent=2))
    if outputs.report is not None:
        try:
            append_section(outputs.report, SECTION_TITLE, where_the_time_goes(profile, title))
        except OSError as exc:
            raise UsageError(f"cannot write {outputs.report}: {exc.strerror or exc}") from None


def _context(spec: LoadSpec) -> float:
    """A stream's average context during decode: its prompt and half its output."""
    return spec.prompt_tokens + spec.max_tokens / 2


HostFactory = Callable[[], Host]


def _title(result: BenchResult) -> str:
    return f"{result.model or '?'} at {result.base_url or '?'} ({result.started_at})"


def _progress(emit: EventSink) -> Callable[[str, int, int], None]:
    return lambda label, done, total: emit(Progress(label=label, done=done, total=total))


def _approval_details(spec: LoadSpec, options: ProfileOptions) -> list[str]:
    """What the person approves: the load, the sampling and, if asked, the bandwidth measurement first."""
    details = [
        f"model {spec.model}, {spec.api} API, concurrency {','.join(map(str, spec.concurrency))}, {spec.repeat} repeat(s), "
        f"{spec.prompt_tokens} prompt / {spec.max_tokens} output tokens each",
        f"the serving GPUs sampled through NVML every {options.interval_s * 1e3:,.0f} ms (read-only)",
        "a production server serves these requests alongside its real traffic",
    ]
    if options.measure_bandwidth:
        details.append("first, a 1 GiB matrix-vector product on each serving GPU to measure its memory bandwidth")
    return details


async def _measured_bandwidth(options: ProfileOptions, gpus: Sequence[int], emit: EventSink) -> tuple[float, str] | None:
    """The slowest serving GPU's measured read bandwidth, when ``--measure-bandwidth`` asks and none is given."""
    if not options.measure_bandwidth or options.bandwidth_gbs is not None:
        return None
    import anyio

    from rigaudit.tools.bench.membw import READ_HOW, measure_read_bandwidth

    emit(Progress(label="measuring memory bandwidth", done=0, total=1))
    per_gpu = await anyio.to_thread.run_sync(measure_read_bandwidth, list(gpus) or [0])
    each = ", ".join(f"{v:,.0f}" for v in per_gpu)
    emit(Progress(label="measuring memory bandwidth", done=1, total=1))
    return min(per_gpu), f"{READ_HOW}; per GPU {each} GB/s, the slowest counts"


def _input_warnings(inputs: ProfileInputs, infos: Sequence[GpuInfo], nvml_error: str | None) -> list[str]:
    """What the split will miss for lack of inputs; a model without a bandwidth on named GPUs is a usage error."""
    if inputs.model is not None and inputs.bandwidth_gbs is None and infos:
        raise UsageError(f"streaming cannot be attributed: {inputs.notes[0].removeprefix('streaming not attributed: ')}")
    warnings: list[str] = []
    if inputs.model is None:
        warnings.append("the model was not described (--config, or --params-b with --bytes-per-param): streaming not attributed")
    if nvml_error:
        warnings.append(f"{nvml_error}: GPU idle between kernels not measured, only the load")
    return warnings


def _sampler_warnings(sampler: Sampler) -> list[str]:
    """What the sampler could not keep up with: its sample cap, or rounds slower than the interval."""
    warnings: list[str] = []
    if sampler.full:
        warnings.append(f"sampling stopped after {sampler.max_samples:,} samples: the last runs have no GPU readings")
    if sampler.late_rounds:
        warnings.append(
            f"{sampler.late_rounds} sampling round(s) took longer than the interval (slow NVML): raise --profile-interval-ms"
        )
    return warnings


async def run_profile(
    spec: LoadSpec,
    options: ProfileOptions,
    *,
    approve: Approve,
    emit: EventSink,
    outputs: Outputs | None = None,
    open_host: HostFactory | None = None,
    load: Load = REAL,
) -> tuple[BenchResult, Profile]:
    """Ask once, sample the serving GPUs while rigaudit's load runs, split each level's time per token, report it.

    ``load``: the client, clock and sleep of the load and the sampler (the real ones unless told)."""
    from rigaudit.tools.bench.profile import profiled_load
    from rigaudit.tools.bench.profile_sampler import serving_gpus

    outputs = outputs or Outputs()
    if (note := await reach(load, spec)) is not None:
        emit(Warning_(text=note))
    approve(
        f"send {spec.total_requests(spec.repeat)} streaming requests to {spec.base_url} and profile its GPUs",
        _approval_details(spec, options),
    )
    if open_host is None:
        from rigaudit.tools.hosts.local import LocalHost

        open_host = LocalHost
    host = open_host()
    try:
        gpus, chosen = await serving_gpus(host, options.gpus)
        nvml_error = None if gpus else chosen
        if options.gpus and not gpus and not chosen.startswith("NVML unavailable"):
            raise UsageError(f"--gpus: {chosen}")
        sampler = Sampler(host, gpus, options.interval_s, load.clock, load.sleep)
        infos = await sampler.describe()
        measured = await _measured_bandwidth(options, gpus, emit)
        inputs = build_inputs(options, infos, _context(spec), measured=measured)
        warnings = _input_warnings(inputs, infos, nvml_error)
        result, windows = await profiled_load(spec, sampler, _progress(emit), load.connect)
    finally:
        await host.aclose()
    profile = Profile(
        host=host.name,
        interval_s=options.interval_s,
        gpus=infos,
        gpus_chosen=chosen,
        nvml_error=nvml_error,
        samples=sampler.samples,
        windows=windows,
        unsupported=sampler.unsupported_lines(),
        late_rounds=sampler.late_rounds,
        inputs=inputs,
        levels=attribute_all(result, sampler.samples, windows, infos, inputs),
        warnings=warnings + _sampler_warnings(sampler),
    )
    publish_inference(result, emit=emit, outputs=replace(outputs, json=None))
    _publish(profile, result, emit=emit, outputs=outputs, title=_title(result))
    return result, profile


def explain_file(path: Path, options: ProfileOptions, *, emit: EventSink, outputs: Outputs | None = None) -> Profile:
    """The split of a recorded profile again, with the inputs the options give replacing the recorded ones."""
    result, recorded = load_profiled(path)
    inputs = build_inputs(options, recorded.gpus, recorded.inputs.context_tokens, base=recorded.inputs)
    levels = attribute_all(result, recorded.samples, recorded.windows, recorded.gpus, inputs)
    profile = recorded.model_copy(update={"inputs": inputs, "levels": levels})
    _publish(profile, result, emit=emit, outputs=outputs or Outputs(), title=f"{_title(result)}, from {path.name}")
    return profile
