"""The inference benchmark result, ``rigaudit.bench/1``: what ``bench inference --json`` writes and ``compare`` reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.stats import percentile

BENCH_SCHEMA = "rigaudit.bench/1"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class Sample(_Model):
    """One request: time to first token, the gaps between streamed tokens, and how it ended."""

    ttft_ms: float | None = None
    itl_ms: list[float] = Field(default_factory=list)
    output_tokens: int = 0
    latency_ms: float | None = None
    ok: bool = True
    error: str | None = None


class Run(_Model):
    """One concurrency level, one repeat."""

    concurrency: int
    repeat: int = 0
    output_tokens_per_s: float
    ttft_ms_p50: float | None = None
    ttft_ms_p99: float | None = None
    itl_ms_p50: float | None = None
    itl_ms_p99: float | None = None
    requests_ok: int = 0
    requests_failed: int = 0
    duration_s: float = 0.0
    samples: list[Sample] = Field(default_factory=list)


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
    runs: list[Run] = Field(default_factory=list)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def summarize(samples: Sequence[Sample], *, concurrency: int, repeat: int, duration_s: float) -> Run:
    """A level's figures from its requests: tokens/s over the level's wall time, TTFT and ITL percentiles."""
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
        samples=list(samples),
    )


def load_result(path: Path) -> BenchResult:
    """Read a ``rigaudit.bench/1`` file; one clear BenchInputError when it is not one."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchInputError(f"{path} is not JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("schema") != BENCH_SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise BenchInputError(f"{path} is not a {BENCH_SCHEMA} result (schema: {found!r})")
    try:
        return BenchResult.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BenchInputError(f"{path}: {where}: {first['msg']}") from None
