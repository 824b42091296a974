"""A profile as tables for the terminal and as the "Where the time goes" section of system-improve.md."""

from __future__ import annotations

from rigaudit.tools.bench.profile_attribution import TERMS, LevelAttribution, Term
from rigaudit.tools.bench.profile_result import Profile
from rigaudit.tools.bench.render import Table, markdown

SECTION_TITLE = "Where the time goes"
METHOD = (
    "method: time per output token = request latency / output tokens (every timed request of the level); "
    "streaming = bytes per GPU per decode step / achievable bandwidth; communication = layers x all-reduces x "
    "latency at the step's message size; idle = (1 - NVML utilisation) x time per token; remainder = what is left. "
    "The gap is the time above streaming; the term holding most of it names the kind of fix."
)


def _f(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _term(term: Term) -> str:
    if term.ms is None:
        return "—"
    share = f" ({term.share:.0%})" if term.share is not None else ""
    return f"{term.ms:,.3f}{share}"


def _pair(a: float | None, b: float | None, digits: int = 2) -> str:
    return "—" if a is None and b is None else f"{_f(a, digits)} / {_f(b, digits)}"


def attribution_table(profile: Profile) -> Table:
    headers = ["concurrency", "ms per token", *(f"{t} ms" for t in TERMS), "sum / measured", "holds the gap"]
    rows = [
        [
            f"{lv.concurrency} ({lv.in_flight:.1f} in flight)",
            _f(lv.ms_per_token, 3),
            *(_term(lv.term(name)) for name in TERMS),
            "—" if lv.closure is None else f"{lv.closure:.0%}",
            lv.holder or "—",
        ]
        for lv in profile.levels
    ]
    return headers, rows


def readings_table(profile: Profile) -> Table:
    headers = ["concurrency", "samples", "GPU util %", "memory util %", "SM MHz (max)", "power W (limit)", "used GiB"]
    headers += ["PCIe GB/s tx / rx", "NVLink GB/s tx / rx"]
    rows = []
    for lv in profile.levels:
        r = lv.readings
        rows.append(
            [
                str(lv.concurrency),
                str(r.samples),
                _f(r.util_pct),
                _f(r.mem_util_pct),
                f"{_f(r.sm_mhz, 0)} ({_f(r.max_sm_mhz, 0)})",
                f"{_f(r.power_w, 0)} ({_f(r.power_limit_w, 0)})",
                _f(r.mem_used_gib),
                _pair(r.pcie_tx_gbs, r.pcie_rx_gbs),
                _pair(r.nvlink_tx_gbs, r.nvlink_rx_gbs),
            ]
        )
    return headers, rows


def _gpus(profile: Profile) -> str:
    names = sorted({g.name or "?" for g in profile.gpus})
    indices = ",".join(str(g.index) for g in profile.gpus)
    return f"GPU {indices} ({', '.join(names)})" if profile.gpus else "no GPU sampled"


def input_lines(profile: Profile) -> list[str]:
    inputs = profile.inputs
    lines = [f"sampled: {_gpus(profile)}, {profile.gpus_chosen}, every {profile.interval_s * 1e3:,.0f} ms through NVML"]
    if profile.nvml_error:
        lines.append(f"NVML: {profile.nvml_error}: idle between kernels is not measured")
    model = inputs.model
    lines.append(f"model: {model.source}" if model is not None else "model: not described (streaming not attributed)")
    if model is not None:
        lines.append(
            f"bytes per token (one stream): {model.active_bytes / 1e9:,.3f} GB of weights ({model.bytes_per_param:.4g} B/param) "
            f"+ {model.kv_bytes_per_token / 1e3:,.1f} KB of KV per context token; {inputs.context_tokens:,.0f} context tokens"
        )
    layout = f"{inputs.tp} GPU(s) per model copy (tensor parallel), {inputs.replicas} copy(ies)"
    lines.append(layout)
    if inputs.bandwidth_gbs is not None:
        lines.append(f"bandwidth: {inputs.bandwidth_gbs:,.0f} GB/s per GPU ({inputs.bandwidth_source})")
    if inputs.comm is not None:
        lines.append(f"all-reduce latency: {inputs.comm.source}")
    return [*lines, *inputs.notes]


def level_lines(level: LevelAttribution) -> list[str]:
    return [f"concurrency {level.concurrency}: {level.verdict}", *(f"concurrency {level.concurrency}: {n}" for n in level.notes)]


def profile_notes(profile: Profile) -> list[str]:
    """Under the tables: the verdict per level, what the GPUs said, what the split rests on, and the warnings."""
    notes = [line for level in profile.levels for line in level_lines(level)]
    notes += input_lines(profile)
    notes += [f"not supported here: {line}" for line in profile.unsupported]
    return [*notes, *profile.warnings, METHOD]


def where_the_time_goes(profile: Profile, title: str) -> str:
    """The markdown block for system-improve.md's "Where the time goes" section."""
    parts = [f"### {title}", ""]
    head = profile.headline()
    if head is not None:
        parts += [f"**At concurrency {head.concurrency}**: {head.verdict}", ""]
    parts += [markdown(attribution_table(profile)), "", markdown(readings_table(profile)), ""]
    others = [line for level in profile.levels if level is not head for line in level_lines(level)]
    extra = (head.notes if head is not None else []) + others
    parts += [f"- {line}" for line in [*extra, *input_lines(profile), *profile.warnings, METHOD]]
    return "\n".join(parts) + "\n"
