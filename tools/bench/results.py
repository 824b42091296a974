"""The inference benchmark result, ``rigaudit.bench/1``: what ``bench inference --json`` writes and ``compare`` reads.

Fields added since the first version are optional, so older files still load: a run's ``order`` and
``started_s`` (when it ran in the session), its serving metrics, the workload's identity (tool
version, request count, warm-up, objectives) that ``compare`` checks before comparing like with like,
and the machine and container the load came from (``host_id``, a digest of its machine-id; ``container``).
A file is untrusted input: bounded in size, numbers finite and non-negative.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt

from rigaudit.tools.bench.errors import BenchInputError, validated
from rigaudit.tools.bench.machine import CONTAINER_PATTERN
from rigaudit.tools.bench.serving import ServingMetrics, serving_metrics
from rigaudit.tools.bench.stats import percentile

BENCH_SCHEMA = "rigaudit.bench/1"
MAX_RESULT_BYTES = 256 * 1024 * 1024
MAX_RUNS = 100_000
MAX_SERVER_VERSION = 200


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, allow_inf_nan=False)


class Sample(_Model):
    """One request: time to first token, the gaps between streamed tokens, and how it ended."""

    ttft_ms: NonNegativeFloat | None = None
    itl_ms: list[NonNegativeFloat] = Field(default_factory=list)
    output_tokens: NonNegativeInt = 0
    latency_ms: NonNegativeFloat | None = None
    ok: bool = True
    error: str | None = None


class Run(_Model):
    """One concurrency level, one repeat."""

    concurrency: NonNegativeInt
    repeat: NonNegativeInt = 0
    output_tokens_per_s: NonNegativeFloat
    ttft_ms_p50: NonNegativeFloat | None = None
    ttft_ms_p99: NonNegativeFloat | None = None
    itl_ms_p50: NonNegativeFloat | None = None
    itl_ms_p99: NonNegativeFloat | None = None
    requests_ok: NonNegativeInt = 0
    requests_failed: NonNegativeInt = 0
    duration_s: NonNegativeFloat = 0.0
    order: NonNegativeInt | None = None
    """Its position among the session's timed runs (0 first); None in results that did not record it."""
    started_s: NonNegativeFloat | None = None
    """When it started, in seconds after the first timed run started."""
    serving: ServingMetrics | None = None
    samples: list[Sample] = Field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.samples) if self.samples else self.requests_ok + self.requests_failed


class GpuAtStart(_Model):
    """One GPU as read at the start of the load (never set): :mod:`rigaudit.tools.bench.provenance`."""

    name: str
    uuid_digest: str = Field(pattern=r"^[0-9a-f]{16}$")
    """A digest of the GPU's UUID (never the UUID itself): the same board in two results, or not."""
    driver: str | None = None
    sm_clock_mhz: NonNegativeFloat | None = None
    mem_clock_mhz: NonNegativeFloat | None = None
    power_limit_w: NonNegativeFloat | None = None


class BenchResult(_Model):
    schema_: str = Field(default=BENCH_SCHEMA, alias="schema")
    kind: Literal["inference"] = "inference"
    base_url: str | None = None
    model: str | None = None
    api: str | None = None
    started_at: str
    max_tokens: int | None = None
    prompt_tokens: int | None = None
    command: str | None = None
    """The external benchmark command whose output was parsed, when one was run."""
    tool: str | None = None
    """What measured it: ``rigaudit 0.1.0``."""
    host: str | None = None
    """The host the load was sent from (its name); None in results that did not record it."""
    host_id: str | None = Field(default=None, pattern=r"^machine-id:[0-9a-f]{16}$")
    """That host's machine, ``machine-id:<digest of /etc/machine-id>`` (:mod:`rigaudit.tools.bench.machine`); None
    in results that did not record it or from a host without a machine-id."""
    container: str | None = Field(default=None, pattern=rf"^({CONTAINER_PATTERN})$")
    """The container it ran in (:func:`rigaudit.tools.bench.machine.container_token`: a digest of the engine's id,
    ``container:none`` outside one, ``container:unknown``); None in results that did not record it."""
    ignore_eos: bool | None = None
    warmup: NonNegativeInt | None = None
    """Untimed requests sent before the first timed run (excluded from every figure)."""
    order: str | None = None
    """How the (level, repeat) runs were ordered in time: ``balanced`` (a Williams Latin square) or ``sequential``."""
    slo: dict[str, float] = Field(default_factory=dict)
    """The service-level objectives goodput was judged against (``ttft_ms``, ``tpot_ms``, ``e2e_ms``)."""
    server_version: str | None = Field(default=None, max_length=MAX_SERVER_VERSION)
    """The server's version string where its API gives one (:func:`rigaudit.tools.bench.provenance.server_version`)."""
    gpus: list[GpuAtStart] | None = Field(default=None, max_length=1024)
    """The GPUs of the machine the load came from, read at the start; None in results that did not record them."""
    samples_digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    """A digest of every run's requests (:func:`rigaudit.tools.bench.provenance.samples_digest`); None in older results."""
    runs: list[Run] = Field(default_factory=list, max_length=MAX_RUNS)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def host_name() -> str:
    """This host's name, as results and calibrations record it."""
    import socket

    return socket.gethostname() or "unknown"


def tool_version() -> str:
    """``rigaudit VERSION`` of the installed distribution."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"rigaudit {version('rigaudit')}"
    except PackageNotFoundError:
        return "rigaudit 0+unknown"


def summarize(
    samples: Sequence[Sample],
    *,
    concurrency: int,
    repeat: int,
    duration_s: float,
    order: int | None = None,
    started_s: float | None = None,
    slo: Mapping[str, float] | None = None,
) -> Run:
    """A level's figures from its requests: tokens/s over the level's wall time, TTFT and ITL percentiles,
    and the serving metrics (``slo``: the objectives goodput counts)."""
    good = [s for s in samples if s.ok]
    ttfts = [s.ttft_ms for s in good if s.ttft_ms is not None]
    itls = [gap for s in good for gap in s.itl_ms]
    tokens = sum(s.output_tokens for s in good)
    return Run(
        concurrency=concurrency,
        repeat=repeat,
        output_tokens_per_s=tokens / duration_s if duration_s > 0 else 0.0,
        ttft_ms_p50=percentile(ttfts, 50),
        ttft_ms_p99=percentile(ttfts, 99),
        itl_ms_p50=percentile(itls, 50),
        itl_ms_p99=percentile(itls, 99),
        requests_ok=len(good),
        requests_failed=len(samples) - len(good),
        duration_s=duration_s,
        order=order,
        started_s=started_s,
        serving=serving_metrics(samples, duration_s, slo) if samples else None,
        samples=list(samples),
    )


def load_result(path: Path) -> BenchResult:
    """Read a ``rigaudit.bench/1`` file; one clear BenchInputError when it is not one."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise BenchInputError(f"{path} is not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_RESULT_BYTES + 1)
    except OSError as exc:
        raise BenchInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_RESULT_BYTES:
        raise BenchInputError(f"{path} is larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB: not a benchmark result")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchInputError(f"{path} is not JSON: {exc}") from None
    except RecursionError:
        raise BenchInputError(f"{path} is nested too deeply to be a benchmark result") from None
    if not isinstance(raw, dict) or raw.get("schema") != BENCH_SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise BenchInputError(f"{path} is not a {BENCH_SCHEMA} result (schema: {found!r})")
    return validated(BenchResult, raw, path)
