"""Where the time of a token goes: the measured time per output token split into four terms, and what moves the gap.

For each concurrency level, the measured time per output token ``t`` (request latency / output
tokens, every timed request pooled) is split into

- **streaming**: the bytes of one decode step (weights, KV cache) per GPU / the achievable bandwidth;
- **communication**: layers x all-reduces per layer x the latency at the step's message size;
- **idle**: (1 - NVML utilisation) x t, the time no kernel ran (launch overhead, the host, Python);
- **remainder**: what is left: busy time not streaming at bandwidth (compute-bound or slow kernels,
  prefill, sampling).

The first two are modelled, the third measured; the remainder is what is left and never negative
in the sum: if the first three exceed ``t``, the sum over-explains it, and ``closure`` (the sum of
the shares / t) says by how much (within 10% is the profile's own check). The gap is ``t`` minus
streaming (what decode would take at the roofline); the term that holds most of it names the kind
of fix that moves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.profile_inputs import ProfileInputs
from rigaudit.tools.bench.profile_sampler import GpuInfo, GpuSample
from rigaudit.tools.bench.stats import mean, percentile

TermName = Literal["streaming", "communication", "idle", "remainder"]
TERMS: tuple[TermName, ...] = ("streaming", "communication", "idle", "remainder")
MEMORY_BOUND_SHARE = 0.7
"""Streaming at least this share of the time per token: decode is memory-bound, the gap is small."""
CLOSURE_LIMIT = 0.10
SETTLE_S = 1.0
"""NVML averages utilisation over up to 1 s: samples this soon after a window opens still see what came before."""
MIN_WINDOW_SAMPLES = 3

FIXES: dict[str, str] = {
    "streaming": (
        "decode is memory-bound: only fewer bytes per token (weight quantization, an FP8 KV cache), more tokens per "
        "read (speculative decoding, larger batches) or more bandwidth (more GPUs: the parallelism layout) move it"
    ),
    "communication": (
        "parallelism layout (fewer tensor-parallel GPUs, expert or pipeline parallelism, NVLink instead of PCIe, a custom "
        "all-reduce); host config if an all-reduce is slow for its size (P2P off, ACS redirect, NCCL over SHM or the "
        "network: the audit's p2p, pcie and nccl checks, `rigaudit bench nccl`)"
    ),
    "idle": (
        "serving features first (CUDA graphs instead of eager mode, overlapped scheduling, less Python per step), then "
        "host config (CPU frequency governor and C-states, the server's NUMA placement: the audit's power and numa checks)"
    ),
    "remainder": (
        "kernels: the GPU is busy but not streaming at bandwidth (a fallback path for the quantization format, the "
        "attention backend, compute-bound GEMMs, sampling); serving features if prefill interleaves (chunked or "
        "disaggregated prefill)"
    ),
}
_WHAT_TELLS: dict[str, str] = {
    "streaming": "describing the model (--config) and the bandwidth (--measure-bandwidth)",
    "communication": "the layer count and tensor-parallel size (--config, --tp)",
    "idle": "NVML utilisation samples (a profile run on the machine with the GPUs)",
}
LABELS: dict[str, str] = {
    "streaming": "weight and KV streaming",
    "communication": "communication (all-reduces)",
    "idle": "GPU idle between kernels",
    "remainder": "the remainder (busy, not streaming)",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class Term(_Model):
    name: TermName
    ms: float | None = None
    """Per output token (one decode step); None where it could not be attributed."""
    share: float | None = None
    """Of the measured time per token."""
    how: str = Field(default="", max_length=4000)


class Readings(_Model):
    """The serving GPUs during a level's windows (means over the samples; None where no GPU said)."""

    samples: int = 0
    window_s: float = 0.0
    util_pct: float | None = None
    per_gpu_util_pct: list[float] = Field(default_factory=list)
    mem_util_pct: float | None = None
    sm_mhz: float | None = None
    max_sm_mhz: float | None = None
    mem_mhz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    mem_used_gib: float | None = None
    pcie_tx_gbs: float | None = None
    pcie_rx_gbs: float | None = None
    nvlink_tx_gbs: float | None = None
    nvlink_rx_gbs: float | None = None


class LevelAttribution(_Model):
    concurrency: int
    requests: int
    tokens: int
    in_flight: float
    """Streams in flight on average (Little's law: request latency over wall time)."""
    ms_per_token: float
    tpot_ms_median: float | None = None
    terms: list[Term]
    closure: float | None = None
    """(the terms, the remainder counted as at least 0) / the measured time: 1.0 unless the terms over-explain it."""
    holder: str = ""
    verdict: str = Field(default="", max_length=4000)
    readings: Readings = Readings()
    notes: list[str] = Field(default_factory=list)

    def term(self, name: str) -> Term:
        return next(t for t in self.terms if t.name == name)


class Window(_Model):
    """When one timed run of one level ran, on the sampler's clock."""

    concurrency: int = Field(ge=0)
    repeat: int = Field(default=0, ge=0)
    start_s: float
    end_s: float


class LevelLoad(_Model):
    """What the load generator measured at one level (every repeat pooled)."""

    concurrency: int
    requests: int
    tokens: int
    latency_s: float
    """Sum of the requests' latencies."""
    wall_s: float
    tpot_ms_median: float | None = None


def _in_windows(samples: Sequence[GpuSample], windows: Sequence[Window], gpus: set[int]) -> list[GpuSample]:
    spans = [(w.start_s + min(SETTLE_S, 0.25 * (w.end_s - w.start_s)), w.end_s) for w in windows]
    return [s for s in samples if s.gpu in gpus and any(a <= s.t <= b for a, b in spans)]


def _rate_gbs(samples: Sequence[GpuSample], windows: Sequence[Window], key: str) -> float | None:
    """A cumulative KiB counter's rate (GB/s) within the windows, per GPU, summed over GPUs."""
    total = 0.0
    found = False
    for gpu in sorted({s.gpu for s in samples}):
        for w in windows:
            points = [(s.t, getattr(s, key)) for s in samples if s.gpu == gpu and w.start_s <= s.t <= w.end_s]
            points = [(t, v) for t, v in points if v is not None]
            if len(points) >= 2 and points[-1][0] > points[0][0]:
                rate = (points[-1][1] - points[0][1]) * 1024 / (points[-1][0] - points[0][0]) / 1e9
                total += max(0.0, rate) * (w.end_s - w.start_s)
                found = True
    seconds = sum(w.end_s - w.start_s for w in windows)
    return total / seconds if found and seconds > 0 else None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def readings(samples: Sequence[GpuSample], windows: Sequence[Window], gpus: Sequence[GpuInfo]) -> Readings:
    indices = {g.index for g in gpus}
    inside = _in_windows(samples, windows, indices)
    per_gpu = [value for gpu in sorted(indices) if (value := _mean([s.util for s in inside if s.gpu == gpu])) is not None]
    limits = [g.power_limit_w for g in gpus if g.power_limit_w]
    max_sm = [g.max_sm_mhz for g in gpus if g.max_sm_mhz]
    used = _mean([s.mem_used_bytes for s in inside])
    sm_busy = [s.sm_mhz for s in inside if s.util is not None and s.util >= 50]
    return Readings(
        samples=len(inside),
        window_s=sum(w.end_s - w.start_s for w in windows),
        util_pct=mean(per_gpu) if per_gpu else None,
        per_gpu_util_pct=per_gpu,
        mem_util_pct=_mean([s.mem_util for s in inside]),
        sm_mhz=_mean(sm_busy) if sm_busy else _mean([s.sm_mhz for s in inside]),
        max_sm_mhz=min(max_sm) if max_sm else None,
        mem_mhz=_mean([s.mem_mhz for s in inside]),
        power_w=_mean([s.power_w for s in inside]),
        power_limit_w=min(limits) if limits else None,
        mem_used_gib=used / 2**30 if used is not None else None,
        pcie_tx_gbs=_mean([s.pcie_tx_gbs for s in inside]),
        pcie_rx_gbs=_mean([s.pcie_rx_gbs for s in inside]),
        nvlink_tx_gbs=_rate_gbs(inside, windows, "nvlink_tx_kib"),
        nvlink_rx_gbs=_rate_gbs(inside, windows, "nvlink_rx_kib"),
    )


def _signals(r: Readings, inputs: ProfileInputs | None, windows: int) -> list[str]:
    """What the GPU readings say besides the split: clocks, power, PCIe and NVLink traffic, imbalance."""
    notes = []
    if r.samples < MIN_WINDOW_SAMPLES * max(1, len(r.per_gpu_util_pct)):
        notes.append(
            f"only {r.samples} sample(s) in {r.window_s:.1f} s of {windows} run(s): NVML averages utilisation over up to "
            "1 s, so the idle share is rough; send more requests per level (--requests)"
        )
    if r.sm_mhz is not None and r.max_sm_mhz and r.sm_mhz < 0.9 * r.max_sm_mhz:
        notes.append(
            f"SM clock {r.sm_mhz:,.0f} of {r.max_sm_mhz:,.0f} MHz while busy: a power cap, a thermal limit or locked "
            "clocks slows every kernel (host config: the audit's power checks; `nvidia-smi -q -d PERFORMANCE` says why)"
        )
    if r.power_w is not None and r.power_limit_w and r.power_w >= 0.95 * r.power_limit_w:
        notes.append(f"power {r.power_w:,.0f} W at its {r.power_limit_w:,.0f} W limit")
    pcie = (r.pcie_tx_gbs or 0.0) + (r.pcie_rx_gbs or 0.0)
    if pcie >= 2.0:
        notes.append(
            f"{pcie:,.1f} GB/s over PCIe during decode: weights or KV offloaded to the host, or host-side sampling "
            "(the serving configuration); the link's width and speed are host config (the audit's pcie checks)"
        )
    if inputs is not None and inputs.comm is not None and r.nvlink_tx_gbs is not None and r.nvlink_tx_gbs < 0.01:
        notes.append(
            "no NVLink traffic while the all-reduces ran: they go over PCIe or the host "
            "(`rigaudit bench nccl` names the transport)"
        )
    if len(r.per_gpu_util_pct) > 1 and max(r.per_gpu_util_pct) - min(r.per_gpu_util_pct) > 15:
        notes.append(
            "utilisation differs across GPUs (" + ", ".join(f"{u:.0f}%" for u in r.per_gpu_util_pct) + "): an uneven layout "
            "or a straggler sets every step's pace"
        )
    return notes


def _streaming(inputs: ProfileInputs | None, streams: float) -> tuple[float | None, str]:
    """Weight and KV streaming per token, and how it was found (or why not)."""
    streaming = inputs.streaming_s(streams) if inputs is not None else None
    if inputs is not None and inputs.model is not None and streaming is None:
        return None, "not attributed: the achievable bandwidth is unknown (--bandwidth-gbs or --measure-bandwidth)"
    if inputs is not None and streaming is not None:
        step = inputs.step_bytes(streams) or 0.0
        return streaming, (
            f"{step / 1e9:,.3f} GB per GPU per step ({streams:.2f} streams, {inputs.context_tokens:,.0f} context tokens each) "
            f"/ {inputs.bandwidth_gbs:,.0f} GB/s ({inputs.bandwidth_source})"
        )
    return streaming, "not attributed: describe the model (--config, or --params-b with --bytes-per-param)"


def _communication(inputs: ProfileInputs | None, streams: float) -> tuple[float | None, str]:
    """The all-reduces per token, and how they were found (or why not)."""
    found = inputs.comm_s(streams) if inputs is not None else None
    if found is not None:
        return found
    if inputs is not None and inputs.tp == 1:
        return 0.0, "one GPU per model copy: no all-reduce"
    return None, "not attributed: the layer count or the tensor-parallel size is unknown"


def _idle(r: Readings, t: float) -> tuple[float | None, str]:
    """GPU idle between kernels per token, from NVML's utilisation (or why not measured)."""
    if r.util_pct is None:
        return None, "not measured: no NVML utilisation samples in the level's runs"
    return (1 - r.util_pct / 100) * t, f"(1 - {r.util_pct:.1f}% NVML utilisation) x {t * 1e3:,.3f} ms"


def _remainder_how(remainder: float, unknown: list[str]) -> str:
    if remainder < 0:
        return f"none: the other terms exceed the measured time by {-remainder * 1e3:,.3f} ms"
    return "what is left of the measured time" + (f" (includes {', '.join(unknown)}: not attributed)" if unknown else "")


def attribute(load: LevelLoad, r: Readings, inputs: ProfileInputs | None, windows: int = 1) -> LevelAttribution:
    """Split one level's measured time per output token into the four terms and name what holds the gap."""
    t = load.latency_s / load.tokens if load.tokens else 0.0
    streams = load.latency_s / load.wall_s if load.wall_s > 0 else 1.0
    notes: list[str] = []
    streaming, streaming_how = _streaming(inputs, streams)
    comm, comm_how = _communication(inputs, streams)
    idle, idle_how = _idle(r, t)
    known = [v for v in (streaming, comm, idle) if v is not None]
    remainder = t - sum(known)
    unknown = [name for name, v in (("streaming", streaming), ("communication", comm), ("idle", idle)) if v is None]
    values: dict[TermName, float | None] = {
        "streaming": streaming,
        "communication": comm,
        "idle": idle,
        "remainder": max(0.0, remainder),
    }
    hows = {
        "streaming": streaming_how,
        "communication": comm_how,
        "idle": idle_how,
        "remainder": _remainder_how(remainder, unknown),
    }
    terms = [
        Term(name=name, ms=None if v is None else v * 1e3, share=None if v is None or t <= 0 else v / t, how=hows[name])
        for name, v in values.items()
    ]
    closure = (sum(known) + max(0.0, remainder)) / t if t > 0 else None
    if closure is not None and closure > 1 + CLOSURE_LIMIT:
        notes.append(
            f"the terms over-explain the measured time by {closure - 1:.0%}: an input is off (the bandwidth is higher "
            "than given, fewer bytes are read, or utilisation under-reads)"
        )
    holder, verdict = _verdict(t, values, unknown)
    notes += _signals(r, inputs, windows)
    return LevelAttribution(
        concurrency=load.concurrency,
        requests=load.requests,
        tokens=load.tokens,
        in_flight=streams,
        ms_per_token=t * 1e3,
        tpot_ms_median=load.tpot_ms_median,
        terms=terms,
        closure=closure,
        holder=holder,
        verdict=verdict,
        readings=r,
        notes=notes,
    )


def _verdict(t: float, values: dict[TermName, float | None], unknown: list[str]) -> tuple[str, str]:
    if t <= 0:
        return "", "no tokens measured"
    streaming = values["streaming"]
    if streaming is not None and streaming >= MEMORY_BOUND_SHARE * t:
        return "streaming", (
            f"{LABELS['streaming']} takes {streaming * 1e3:,.2f} of {t * 1e3:,.2f} ms per token ({streaming / t:.0%}): "
            f"{FIXES['streaming']}"
        )
    gap = t - (streaming or 0.0)
    candidates = {name: v for name, v in values.items() if name != "streaming" and v is not None}
    holder = max(candidates, key=lambda name: candidates[name] or 0.0)
    value = candidates[holder] or 0.0
    if holder == "remainder" and unknown:
        # what is left holds the unmeasured terms too: naming the kernels would attribute what was not observed
        return "", (
            f"not attributed: {value * 1e3:,.2f} of {t * 1e3:,.2f} ms per token ({value / t:.0%}) is left after the terms "
            f"measured, and it includes {', '.join(unknown)}, which {'was' if len(unknown) == 1 else 'were'} not measured; "
            f"{_WHAT_TELLS[unknown[0]]} would tell whether the GPU was busy or waiting"
        )
    of_gap = f" ({value / gap:.0%} of the {gap * 1e3:,.2f} ms gap above streaming)" if streaming is not None and gap > 0 else ""
    caveat = f"; not attributed: {', '.join(unknown)} (counted in the remainder)" if unknown else ""
    return holder, (
        f"{LABELS[holder]} holds the gap: {value * 1e3:,.2f} of {t * 1e3:,.2f} ms per token ({value / t:.0%}){of_gap}. "
        f"What moves it: {FIXES[holder]}{caveat}"
    )


def level_loads(runs: Sequence[object]) -> list[LevelLoad]:
    """Per concurrency level, the successful requests of every repeat pooled (``rigaudit.bench/1`` runs)."""
    from rigaudit.tools.bench.results import Run
    from rigaudit.tools.bench.serving import tpot_ms

    levels: dict[int, list[Run]] = {}
    for run in runs:
        if isinstance(run, Run):
            levels.setdefault(run.concurrency, []).append(run)
    out = []
    for concurrency, group in sorted(levels.items()):
        good = [s for run in group for s in run.samples if s.ok and s.latency_ms is not None and s.output_tokens > 0]
        tpots = [v for s in good if (v := tpot_ms(s)) is not None]
        out.append(
            LevelLoad(
                concurrency=concurrency,
                requests=len(good),
                tokens=sum(s.output_tokens for s in good),
                latency_s=sum((s.latency_ms or 0.0) for s in good) / 1e3,
                wall_s=sum(run.duration_s for run in group),
                tpot_ms_median=percentile(tpots, 50) if tpots else None,
            )
        )
    return out
