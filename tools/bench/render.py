"""Tables of the benchmark results, as (headers, rows) and as markdown for system-improve.md."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rigaudit.tools.bench.ab import AbComparison
from rigaudit.tools.bench.compare import Comparison, LevelComparison, MetricChange
from rigaudit.tools.bench.nccl import NcclReport
from rigaudit.tools.bench.nccl_parse import human_size
from rigaudit.tools.bench.p2p import P2PReport
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.bench.roofline import Roofline
from rigaudit.tools.bench.serving import level_serving
from rigaudit.tools.bench.stats import median, relative_spread

Table = tuple[list[str], list[list[str]]]


def _f(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def markdown(table: Table) -> str:
    headers, rows = table
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def p2p_table(report: P2PReport) -> Table:
    headers = ["pair", "one way GB/s", "both ways GB/s", "staged GB/s", "link limit", "of limit", "data", "verdict"]
    rows = [
        [
            f"GPU{p.src}→GPU{p.dst}",
            _f(p.unidir_gbps),
            _f(p.bidir_gbps),
            _f(p.staged_gbps),
            p.link_detail if p.limit_gbps else f"unknown ({p.link_detail})",
            "—" if p.fraction_of_limit is None else f"{p.fraction_of_limit:.0%}",
            "ok" if p.data_ok else "CORRUPT",
            "; ".join(p.problems) or "ok",
        ]
        for p in report.pairs
    ]
    return headers, rows


def nccl_table(report: NcclReport) -> Table:
    headers = ["size", "time µs", "algbw GB/s", "busbw GB/s", "data"]
    rows = [
        [
            human_size(r.bytes),
            _f(r.time_us),
            _f(r.algbw_gbps, 2),
            _f(r.busbw_gbps, 2),
            "—" if r.data_ok is None else "ok" if r.data_ok else "WRONG",
        ]
        for r in report.rows
    ]
    return headers, rows


def bench_table(result: BenchResult) -> Table:
    headers = ["concurrency", "repeat", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", "ok", "failed"]
    rows = [
        [
            str(r.concurrency),
            str(r.repeat + 1),
            _f(r.output_tokens_per_s),
            _f(r.ttft_ms_p50),
            _f(r.ttft_ms_p99),
            _f(r.itl_ms_p50, 2),
            _f(r.itl_ms_p99, 2),
            str(r.requests_ok),
            str(r.requests_failed),
        ]
        for r in result.runs
    ]
    return headers, rows


def _median_spread(values: list[float], digits: int = 1) -> str:
    """``median (range R%)`` of one level's repeats (R: max - min over the median); the median alone for one."""
    if not values:
        return "—"
    mid = median(values)
    cv = relative_spread(values) if len(values) > 1 else None
    return _f(mid, digits) + (f" (range {cv:.0%})" if cv is not None else "")


def level_summary(result: BenchResult) -> Table:
    """Per level, after the repeat rows: output tok/s, TTFT and ITL medians over its repeats, with their spread."""
    headers = ["concurrency", "repeats", "output tok/s", "TTFT p50 ms", "ITL p50 ms", "failed"]
    rows = []
    for concurrency in sorted({r.concurrency for r in result.runs}):
        runs = [r for r in result.runs if r.concurrency == concurrency]
        rows.append(
            [
                str(concurrency),
                str(len(runs)),
                _median_spread([r.output_tokens_per_s for r in runs if r.requests_ok]),
                _median_spread([r.ttft_ms_p50 for r in runs if r.ttft_ms_p50 is not None]),
                _median_spread([r.itl_ms_p50 for r in runs if r.itl_ms_p50 is not None], 2),
                str(sum(r.requests_failed for r in runs)),
            ]
        )
    return headers, rows


def serving_table(result: BenchResult) -> Table:
    """Per level, every timed request of every repeat pooled: TTFT, TPOT, ITL and E2E latency (ms)."""
    headers = ["concurrency", "metric", "mean", "median", "p90", "p95", "p99", "std", "n"]
    rows: list[list[str]] = []
    for concurrency, metrics in level_serving(result):
        for name, dist in (
            ("TTFT ms", metrics.ttft_ms),
            ("TPOT ms", metrics.tpot_ms),
            ("ITL ms", metrics.itl_ms),
            ("E2E ms", metrics.e2e_ms),
        ):
            values = (dist.mean, dist.median, dist.p90, dist.p95, dist.p99, dist.std)
            rows.append([str(concurrency), name, *(_f(v, 2) for v in values), str(dist.n)])
    return headers, rows


def serving_notes(result: BenchResult) -> list[str]:
    """Request throughput and goodput per level, and what was excluded."""
    notes = []
    slo = ", ".join(f"{k} <= {v:g}" for k, v in result.slo.items())
    for concurrency, metrics in level_serving(result):
        line = f"concurrency {concurrency}: {metrics.request_throughput:.2f} requests/s"
        if metrics.goodput is not None and metrics.good_fraction is not None:
            line += f"; goodput {metrics.goodput:.2f} requests/s ({metrics.good_fraction:.0%} of requests met {slo})"
        notes.append(line)
    if result.warmup:
        notes.append(f"warm-up: the first {result.warmup} request(s) were untimed and are excluded from every figure")
    return notes


def _change(m: MetricChange) -> str:
    if m.change is None:
        return "—"
    ci = f" [{m.ci_low:+.1%}, {m.ci_high:+.1%}]" if m.ci_low is not None and m.ci_high is not None else ""
    return f"{m.change:+.1%}{ci}"


def _p(m: MetricChange) -> str:
    return "—" if m.p_adjusted is None else f"{m.p_adjusted:.3f}"


_MARKS = {"improved": "improved", "regressed": "regressed", "no significant change": "~"}


def _secondary(m: MetricChange | None) -> str:
    """A secondary metric in few characters: ``-12.0% [-20%, -4%] improved``, ``+1.0% [...] ~``, ``... ? need 9``."""
    if m is None:
        return "—"
    need = "?"
    if m.repeats_needed:
        need = f"? need {m.repeats_needed}"
    elif m.sessions_needed:
        need = f"? need {m.sessions_needed} sessions"
    mark = _MARKS.get(m.verdict) or need
    return f"{_change(m)} {mark}"


COMPARE_LEGEND = (
    "~ no significant change; ? not enough repeats (need: repeats per session, or sessions a side, at the observed spread)"
)


def _change_cells(level: LevelComparison) -> list[str]:
    """A level's headline: tok/s before and after, the change, its p and verdict; then TTFT's and ITL's changes."""
    tput = level.headline
    others = {m.metric: m for m in level.metrics[1:]}
    return [
        f"{_f(tput.base)} → {_f(tput.new)}",
        _change(tput),
        _p(tput),
        tput.label,
        _secondary(others.get("ttft_ms_p50")),
        _secondary(others.get("itl_ms_p50")),
    ]


def compare_table(comparison: Comparison) -> Table:
    confidence = f"{comparison.confidence:.0%}"
    headers = ["concurrency", "tok/s base → new", f"change [{confidence} CI]", "p (Holm)", "verdict", "TTFT p50", "ITL p50"]
    rows = []
    for level in comparison.levels:
        sides = f"{level.base_repeats}×/{level.new_repeats}×"
        if level.base_sessions > 1 or level.new_sessions > 1:
            counts = {level.base_sessions, level.new_sessions}
            shown = str(level.base_sessions) if len(counts) == 1 else f"{level.base_sessions}/{level.new_sessions}"
            sides = f"{shown} sessions: {sides}"
        rows.append([f"{level.concurrency} ({sides})", *_change_cells(level)])
    return headers, rows


def ab_table(comparison: AbComparison) -> Table:
    """Each fix against the baseline, level by level (paired over the A/B cycles)."""
    confidence = f"{comparison.confidence:.0%}"
    headers = ["fix", "concurrency", "tok/s A → B", f"change [{confidence} CI]", "p (Holm)", "verdict", "TTFT p50", "ITL p50"]
    rows = []
    for arm in comparison.arms:
        for level in arm.levels:
            rows.append([arm.arm, f"{level.concurrency} ({level.base_repeats} pairs)", *_change_cells(level)])
    return headers, rows


def _range(low: float, high: float, fmt: str, unit: str = "") -> str:
    return f"{high:{fmt}}{unit}" if math.isclose(low, high, rel_tol=1e-9) else f"{low:{fmt}}-{high:{fmt}}{unit}"


def roofline_lines(r: Roofline) -> list[str]:
    """The bound, how it is made, and what it rests on, as lines for a terminal."""
    lines = [
        f"bytes per token: {r.bytes_per_token / 1e9:,.2f} GB = {r.active_params / 1e9:,.2f} B active params × "
        f"{r.bytes_per_param:.4g} B/param" + (f" + KV {r.kv_bytes / 1e9:,.3f} GB ({r.context:,} tokens)" if r.kv_bytes else ""),
    ]
    if r.weights is not None and len(r.weights.shares) > 1:
        lines.append(
            "  by format: "
            + ", ".join(
                f"{s.format} {s.active_params / 1e9:,.2f} B ({r.weights.fraction(s.format):.0%}) × {s.bytes_per_param:.4g}"
                for s in r.weights.shares
            )
        )
    low_f, high_f = r.achievable
    achieved = "" if low_f == high_f == 1.0 else f"; decode achieves {_range(low_f * 100, high_f * 100, '.0f', '%')} of it"
    lines.append(
        f"bandwidth: {r.gpus} × {r.bandwidth_gbs:,.0f} GB/s = {r.aggregate_gbs:,.0f} GB/s ({r.bandwidth_source}){achieved}"
    )
    if r.comm is not None:
        lines.append(f"communication: {r.comm.describe()}")
    low, high = r.bound_range
    alone = ""
    if r.comm is not None:
        comm = r.comm_seconds[0]
        alone = f" (memory alone: {r.memory_bound_tok_s:,.1f}; communication alone: {1 / comm if comm else float('inf'):,.1f})"
    lines.append(f"single-stream decode bound: {_range(low, high, ',.1f')} tok/s{alone}")
    found = r.efficiency_range
    if r.measured_tok_s is not None and found is not None:
        lines.append(
            f"measured: {r.measured_tok_s:,.2f} tok/s = {_range(found[0] * 100, found[1] * 100, '.1f', '%')} of the bound"
        )
        if (verdict := r.verdict()) is not None:
            lines.append(verdict)
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in r.assumptions()]
    return lines


def section(title: str, table: Table, notes: Sequence[str] = ()) -> str:
    """A markdown block for ``rigaudit.orchestrator.report.document.append_section``."""
    parts = [f"### {title}", "", markdown(table)]
    if notes:
        parts += ["", *[f"- {note}" for note in notes]]
    return "\n".join(parts) + "\n"
