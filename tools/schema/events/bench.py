"""A benchmark's result, as the person sees it and as its own JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.schema.events.base import BaseEvent


class BenchTable(BaseModel):
    """A result as the person sees it: a titled table of text cells."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    title: str
    headers: list[str]
    rows: list[list[str]]


class BenchResultReported(BaseEvent):
    type: Literal["bench_result"] = "bench_result"
    kind: str
    """``p2p``, ``nccl``, ``inference``, ``compare``, ``roofline``."""
    summary: str
    """The report section it belongs to (``Validation``, ``Benchmark comparison``)."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The result as its own JSON (``rigaudit.p2p/1``, ``rigaudit.bench/1``...): what ``--json`` writes."""
    tables: list[BenchTable] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    """Lines shown under the table (versions, GPUs, how to read it)."""
