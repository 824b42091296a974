"""How much prompt a full LLM audit of the seed snapshot sends (budget: 150,000 characters in total).

Runs ``run_audit`` with the LLM brain on the seed snapshot against the scripted loopback server,
through the real openai client, and measures every request's prompt at the server (its messages,
tool schemas and response format, as JSON). Two runs:

- ``final``: every agent answers ``{"findings": []}`` at once (the cost of LLM mode itself);
- ``one-tool``: one agent (kernel) first reads a file, then answers;
- ``every-tool``: every agent first reads one file, then answers (each tool round resends the conversation).

    /work/venv/bin/python benchmarks/llm_prompt_size.py [--snapshot DIR]

Exit status 1 when the ``final`` or ``one-tool`` run exceeds the budget.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.testing.server import Reply, ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.audit import AuditOptions, run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost

BUDGET = 150_000
SEED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"


def _after_one_tool(body: dict[str, Any]) -> Reply:
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return final({"findings": []})
    return call("read_file", path="/proc/cmdline")


def measure(snapshot: Path, variant: str) -> tuple[int, dict[str, int], int]:
    """(total prompt characters, by agent, requests) of one LLM audit."""
    answer = final({"findings": []})
    scripts = {"kernel": [call("read_file", path="/proc/cmdline"), answer]} if variant == "one-tool" else {}
    with ScriptedOpenAIServer(scripts, default=_after_one_tool if variant == "every-tool" else answer) as server:
        brain = LLMBrain(LlmConfig(base_url=server.base_url, model="scripted", backoff_s=0.01))

        async def main() -> None:
            result = await run_audit(SnapshotHost(snapshot), options=AuditOptions(brain=brain))
            await brain.aclose()
            if result.warnings:
                raise SystemExit(f"unexpected warnings: {result.warnings}")

        anyio.run(main)
        by_agent: dict[str, int] = defaultdict(int)
        for request in server.requests:
            by_agent[request.key] += request.prompt_chars
        return sum(by_agent.values()), dict(by_agent), len(server.requests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshot", type=Path, default=SEED)
    args = parser.parse_args()
    totals: dict[str, int] = {}
    for variant in ("final", "one-tool", "every-tool"):
        total, by_agent, requests = measure(args.snapshot, variant)
        totals[variant] = total
        print(f"{variant}: {total:,} prompt characters in {requests} requests")
        for agent, chars in sorted(by_agent.items(), key=lambda kv: -kv[1]):
            print(f"  {agent:<15} {chars:>8,}")
    ok = totals["final"] <= BUDGET and totals["one-tool"] <= BUDGET
    print(
        f"budget {BUDGET:,}: {'within' if ok else 'EXCEEDED'} (final answers: {totals['final'] / BUDGET:.0%}; "
        f"one tool round: {totals['one-tool'] / BUDGET:.0%}; a tool round in every agent: {totals['every-tool'] / BUDGET:.0%})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
