"""One shared pace for every agent's requests to an endpoint: after a 429 they all wait.

A loopback gateway lets ``LIMIT`` requests through per ``WINDOW_S`` and answers 429 to the rest. Six
agents that reach it at once: with the per-request retry alone (each request retrying on its own,
429s counted as its retries) some are lost; with the shared gate none is, every rule finding stands.
``Retry-After`` is read as milliseconds, seconds or an HTTP date. The limit is told once among what
was handled.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from rigaudit.agents.llm import LLMBrain, LlmConfig, OpenAIChatModel
from rigaudit.agents.llm import client as client_module
from rigaudit.agents.llm.rate import retry_after
from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, fail, final
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.schema.audit import AuditResult
from tests.test_llm_support import SeedHost, rule_findings

AREAS = ["kernel", "numa", "pcie", "power", "container", "runtime"]
LIMIT = 3
WINDOW_S = 1.0


class Gateway:
    """At most ``LIMIT`` requests per ``WINDOW_S`` (those it let through); more get 429 with a 20 ms Retry-After.
    The first ``burst`` requests are held until all of them arrived, so the agents reach it at once."""

    def __init__(self, burst: int) -> None:
        self.passed: deque[float] = deque()
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(burst, timeout=20)
        self.arrivals = 0
        self.refused = 0

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        with self.lock:
            self.arrivals += 1
            first = self.arrivals <= self.barrier.parties
        if first:
            self.barrier.wait()
        with self.lock:
            now = time.monotonic()
            while self.passed and now - self.passed[0] >= WINDOW_S:
                self.passed.popleft()
            if len(self.passed) >= LIMIT:
                self.refused += 1
                return fail(429, "rate limit exceeded", retry_after_ms=20)
            self.passed.append(now)
        return final({"findings": []})


class NoGate:
    """The per-request retry alone: no shared pace."""

    async def wait(self) -> float:
        return anyio.current_time()

    def limited(self, started: float, retry_after_s: float | None) -> None:
        pass

    def passed(self) -> None:
        pass


def _audit(shared: bool) -> tuple[AuditResult, Gateway]:
    gateway = Gateway(burst=len(AREAS))
    with ScriptedOpenAIServer({}, default=gateway) as server:
        config = LlmConfig(base_url=server.base_url, model="scripted", max_parallel=8, backoff_s=0.01, backoff_cap_s=0.2)
        model = OpenAIChatModel(config)
        if not shared:
            model.gate = NoGate()  # type: ignore[assignment]
        brain = LLMBrain(config, model=model)

        async def audit() -> AuditResult:
            try:
                return await run_audit(SeedHost(), options=AuditOptions(brain=brain, areas=AREAS))
            finally:
                await brain.aclose()

        return anyio.run(audit), gateway


def test_a_rate_limited_gateway_loses_no_agent_where_the_per_request_retry_lost_some(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as old:
        old.setattr(client_module, "RATE_LIMITED_TRIES", 0)  # a 429 is one of the request's own retries
        alone, _ = _audit(shared=False)
    assert alone.llm is not None and alone.llm.failed, "the per-request retry lost no agent: the gateway is too lenient"
    shared, gateway = _audit(shared=True)
    assert gateway.refused > 0  # the gateway did limit it
    assert shared.llm is not None and shared.llm.status == "ok" and shared.llm.failed == ()
    assert {r.llm for r in shared.investigators} == {"answered"}
    assert [f.model_dump(mode="json") for f in shared.findings] == rule_findings(AREAS)
    told = [n for n in shared.llm.notes if "limited the rate (HTTP 429)" in n]
    assert len(told) == 1 and "agents:" in told[0]  # the pace it took is said once, with the agents it held back


def _exc(headers: dict[str, str]) -> Any:
    return SimpleNamespace(response=SimpleNamespace(headers=headers))


def test_retry_after_is_read_as_milliseconds_seconds_or_an_http_date() -> None:
    now = datetime(2026, 12, 3, 8, 0, 0, tzinfo=timezone.utc)
    assert retry_after(_exc({"retry-after-ms": "250"})) == 0.25
    assert retry_after(_exc({"retry-after": "3"})) == 3.0
    assert retry_after(_exc({"retry-after": "Thu, 03 Dec 2026 08:00:07 GMT"}), now=now) == 7.0
    assert retry_after(_exc({"retry-after": "Thu, 03 Dec 2026 07:59:00 GMT"}), now=now) == 0.0  # already past
    assert retry_after(_exc({"retry-after": "soon"})) is None
    assert retry_after(_exc({"retry-after": "nan"})) is None
    assert retry_after(_exc({})) is None
