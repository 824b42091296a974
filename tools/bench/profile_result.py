"""A profile, ``rigaudit.profile/1``: the GPU samples, the runs' windows, the inputs and the attribution.

``bench inference --profile --json FILE`` writes the ``rigaudit.bench/1`` result with this under
``"profile"`` (so ``bench compare`` reads the same file); ``rigaudit explain FILE`` reads it back as
untrusted input: bounded in size, numbers finite, lists bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.errors import BenchInputError, validated
from rigaudit.tools.bench.profile_attribution import LevelAttribution, Window, attribute, level_loads, readings
from rigaudit.tools.bench.profile_inputs import ProfileInputs
from rigaudit.tools.bench.profile_sampler import MAX_SAMPLES, GpuInfo, GpuSample
from rigaudit.tools.bench.results import BENCH_SCHEMA, MAX_RESULT_BYTES, BenchResult

PROFILE_SCHEMA = "rigaudit.profile/1"


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, allow_inf_nan=False)

    schema_: str = Field(default=PROFILE_SCHEMA, alias="schema")
    host: str = Field(default="", max_length=256)
    interval_s: float = Field(default=0.1, gt=0, le=60)
    gpus: list[GpuInfo] = Field(default_factory=list, max_length=4096)
    gpus_chosen: str = Field(default="", max_length=2000)
    nvml_error: str | None = Field(default=None, max_length=2000)
    samples: list[GpuSample] = Field(default_factory=list, max_length=MAX_SAMPLES)
    windows: list[Window] = Field(default_factory=list, max_length=100_000)
    unsupported: list[str] = Field(default_factory=list, max_length=10_000)
    late_rounds: int = 0
    inputs: ProfileInputs = ProfileInputs()
    levels: list[LevelAttribution] = Field(default_factory=list, max_length=4096)
    warnings: list[str] = Field(default_factory=list, max_length=1000)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def summary_dict(self) -> dict[str, Any]:
        """Everything but the samples (an event, a transcript line): their count instead."""
        return {**self.model_dump(mode="json", by_alias=True, exclude={"samples"}), "sample_count": len(self.samples)}

    def headline(self) -> LevelAttribution | None:
        """The single-stream level when there is one (the roofline's question), else the lowest concurrency."""
        return min(self.levels, key=lambda lv: lv.concurrency) if self.levels else None


def attribute_all(
    result: BenchResult,
    samples: list[GpuSample],
    windows: list[Window],
    gpus: list[GpuInfo],
    inputs: ProfileInputs,
) -> list[LevelAttribution]:
    """Every level of ``result`` attributed, from the samples inside that level's windows."""
    out = []
    for load in level_loads(result.runs):
        mine = [w for w in windows if w.concurrency == load.concurrency]
        out.append(attribute(load, readings(samples, mine, gpus), inputs, len(mine)))
    return out


def load_profiled(path: Path) -> tuple[BenchResult, Profile]:
    """A ``bench inference --profile --json`` file: its benchmark result and its profile; one clear line otherwise."""
    from rigaudit.tools.files.bounded import load_json

    raw = load_json(path, limit=MAX_RESULT_BYTES)
    if not isinstance(raw, dict) or raw.get("schema") != BENCH_SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise BenchInputError(f"{path} is not a {BENCH_SCHEMA} result (schema: {found!r})")
    data = raw.get("profile")
    if not isinstance(data, dict) or data.get("schema") != PROFILE_SCHEMA:
        raise BenchInputError(f"{path} has no profile: record one with `rigaudit bench inference --profile --json FILE`")
    return validated(BenchResult, raw, path), validated(Profile, data, path, "profile.")
