"""Does a result file hold together? What ``bench compare`` refuses before it compares anything.

A result that records a digest of its samples (every result of this version) must match it, each run's
summary (output tok/s, the TTFT and ITL medians, the request counts) must follow from its samples, and it
must name the host the load came from. Older results, without a digest, are read as they are.
"""

from __future__ import annotations

import math

from rigaudit.tools.bench.provenance import samples_digest
from rigaudit.tools.bench.results import BenchResult, Run, summarize

REL_TOL = 1e-6


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)


def _follows(run: Run) -> bool:
    """The run's figures are what its samples give (a run without samples: nothing to check)."""
    if not run.samples:
        return True
    again = summarize(run.samples, concurrency=run.concurrency, repeat=run.repeat, duration_s=run.duration_s)
    return (
        _close(run.output_tokens_per_s, again.output_tokens_per_s)
        and _close(run.ttft_ms_p50, again.ttft_ms_p50)
        and _close(run.itl_ms_p50, again.itl_ms_p50)
        and (run.requests_ok, run.requests_failed) == (again.requests_ok, again.requests_failed)
    )


def problems(result: BenchResult) -> list[str]:
    """Why this result cannot be compared as it is (empty: it holds together)."""
    found = []
    if result.samples_digest is not None:
        if result.samples_digest != samples_digest(result.runs):
            found.append("its samples do not match the digest it recorded (edited or cut?)")
        if not result.host:
            found.append("it names no host (removed?): whose load it was cannot be told")
    for run in result.runs:
        if not _follows(run):
            found.append(f"the summary of concurrency {run.concurrency} repeat {run.repeat + 1} does not follow from its samples")
            break
    return found
