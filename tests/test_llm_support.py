"""Helpers of the LLM tests (no tests here): a seed host with extra files that records commands, and
the seed's rule findings computed once."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from rigaudit.agents.registry import select
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.base import CommandResult, FileResult
from rigaudit.tools.hosts.snapshot import SnapshotHost

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


class SeedHost(SnapshotHost):
    """The read-only seed, plus ``extra`` files (no copy needed), remembering every command that reached it."""

    def __init__(self, extra: Mapping[str, str] | None = None, root: Path = SEED) -> None:
        super().__init__(root)
        self.extra = {path: text.encode() for path, text in (extra or {}).items()}
        self.ran: list[tuple[str, ...]] = []

    async def read(self, path: str) -> FileResult:
        if path in self.extra:
            return FileResult(path, self.extra[path])
        return await super().read(path)

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        self.ran.append(tuple(argv))
        return await super().run(argv, timeout_s=timeout_s)


@functools.cache
def _rule_findings(areas: tuple[str, ...] | None) -> tuple[str, ...]:
    investigators = select(list(areas)) if areas else None
    result = anyio.run(lambda: run_audit(SnapshotHost(SEED), options=AuditOptions(investigators=investigators)))
    return tuple(f.model_dump_json() for f in result.findings)


def rule_findings(areas: Sequence[str] | None = None) -> list[dict]:  # type: ignore[type-arg]
    """The seed's rule findings (of ``areas``, default all) as JSON objects, audited once per test run."""
    return [json.loads(text) for text in _rule_findings(tuple(areas) if areas else None)]
