"""How much prompt a full LLM audit of the seed snapshot sends, and whether the token budget holds.

Runs ``run_audit`` with the LLM brain on the seed snapshot against the scripted loopback server,
through the real openai client, at default settings, and measures every request's prompt at the
server (its messages, tool schemas and response format, as JSON). Runs:

- ``final``: every agent answers ``{"findings": []}`` at once (the cost of LLM mode itself);
- ``one-tool``: one agent (kernel) first reads a file, then answers;
- ``every-tool``: every agent first reads one file, then answers (one tool round per agent);
- ``greedy``: every agent reads a file every round until its steps run out (the most a model can ask for);
- ``greedy-budget``: ``greedy`` under ``--llm-max-tokens 40000``: the budget must hold, the agents still answer.

    python benchmarks/llm_prompt_size.py [--snapshot DIR] [--out FILE.json]

Each run is also broken down by part (where the characters go): the tool schemas, the area briefs, the rules of
the session, the rule findings, the rules' evidence, the rest of the openings, the conversation after them
(tool calls and results, retries) and the response format.

Exit status 1 when ``final``, ``one-tool`` or ``every-tool`` exceeds 150,000 characters or a budget is exceeded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from rigaudit.agents.llm import LLMBrain, LlmConfig
from rigaudit.agents.llm.prompt import FINDINGS_HEADER, SAFETY_PREAMBLE
from rigaudit.agents.llm.testing.server import Recorded, Reply, ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost

BUDGET = 150_000
TIGHT_TOKENS = 40_000
SEED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"
ANSWER = final({"findings": []})
EVIDENCE_HEADER = "Evidence the rules read"
PARTS = (
    "tools",
    "briefs",
    "rules of the session",
    "rule findings",
    "evidence",
    "opening, other",
    "conversation",
    "response format",
)


def _chars(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _text(value: str) -> int:
    return _chars(value) - 2  # a string's characters as JSON, without its quotes


def breakdown(request: Recorded) -> dict[str, int]:
    """Where one request's prompt characters go (the parts add up to its ``prompt_chars``)."""
    body = request.body
    parts = dict.fromkeys(PARTS, 0)
    parts["tools"] = _chars(body["tools"]) + len(',"tools":') if "tools" in body else 0
    parts["response format"] = _chars(body["response_format"]) + len(',"response_format":') if "response_format" in body else 0
    messages = request.messages
    system, user = (str(m.get("content") or "") for m in messages[:2]) if len(messages) >= 2 else ("", "")
    rules_at = system.find(SAFETY_PREAMBLE)
    parts["briefs"] = _text(system[:rules_at]) if rules_at >= 0 else _text(system)
    parts["rules of the session"] = _text(system[rules_at:]) if rules_at >= 0 else 0
    found = user.find(FINDINGS_HEADER)
    evidence = user.find(EVIDENCE_HEADER)
    end = user.rfind("\n")
    if found >= 0:
        stop = evidence if evidence >= 0 else end
        parts["rule findings"] = _text(user[found:stop])
        parts["evidence"] = _text(user[evidence:end]) if evidence >= 0 else 0
    parts["conversation"] = _chars(messages[2:]) - 2 if len(messages) > 2 else 0
    parts["opening, other"] = request.prompt_chars - sum(parts.values())
    return parts


def _after_one_tool(body: dict[str, Any]) -> Reply:
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return ANSWER
    return call("read_file", path="/proc/cmdline")


def _greedy(body: dict[str, Any]) -> Reply:
    """Always one more file, until no tools are offered (the last step, or the budget near)."""
    return call("read_file", path="/proc/cmdline") if body.get("tools") else ANSWER


VARIANTS: dict[str, tuple[Callable[[dict[str, Any]], Reply] | Reply, int | None]] = {
    "final": (ANSWER, None),
    "one-tool": (ANSWER, None),
    "every-tool": (_after_one_tool, None),
    "greedy": (_greedy, None),
    "greedy-budget": (_greedy, TIGHT_TOKENS),
}


def measure(snapshot: Path, variant: str) -> dict[str, Any]:
    """Prompt characters (total and by agent), requests, and what the budget booked, for one LLM audit."""
    default, tokens = VARIANTS[variant]
    scripts = {"kernel": [call("read_file", path="/proc/cmdline"), ANSWER]} if variant == "one-tool" else {}
    with ScriptedOpenAIServer(scripts, default=default) as server:
        config = LlmConfig(base_url=server.base_url, model="scripted", backoff_s=0.01)
        if tokens is not None:
            config = LlmConfig(base_url=server.base_url, model="scripted", backoff_s=0.01, max_audit_tokens=tokens)
        brain = LLMBrain(config)

        async def main() -> Any:
            try:
                return await run_audit(SnapshotHost(snapshot), options=AuditOptions(brain=brain))
            finally:
                await brain.aclose()

        result = anyio.run(main)
        by_agent: dict[str, int] = defaultdict(int)
        by_part: dict[str, int] = dict.fromkeys(PARTS, 0)
        for request in server.requests:
            by_agent[request.key] += request.prompt_chars
            for part, chars in breakdown(request).items():
                by_part[part] += chars
    answered = sum(1 for r in result.investigators if r.llm == "answered")
    return {
        "variant": variant,
        "prompt_chars": sum(by_agent.values()),
        "requests": len(server.requests),
        "by_agent": dict(by_agent),
        "by_part": by_part,
        "budget_tokens": config.max_audit_tokens,
        "booked_tokens": brain.book.total.tokens,
        "answered": answered,
        "agents": len(result.investigators),
        "warnings": list(result.warnings),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshot", type=Path, default=SEED)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here (default: $OUT/llm_prompt_size.json if set)")
    args = parser.parse_args()
    figures = [measure(args.snapshot, variant) for variant in VARIANTS]
    ok = True
    for row in figures:
        share = row["prompt_chars"] / BUDGET
        held = row["booked_tokens"] <= row["budget_tokens"]
        ok = ok and held
        print(
            f"{row['variant']:<14} {row['prompt_chars']:>9,} prompt characters ({share:.0%} of {BUDGET:,}) in "
            f"{row['requests']:>3} requests; {row['booked_tokens']:,} of {row['budget_tokens']:,} tokens booked "
            f"({'held' if held else 'EXCEEDED'}); {row['answered']}/{row['agents']} agents answered"
        )
        print("  " + ", ".join(f"{part} {chars:,}" for part, chars in row["by_part"].items() if chars))
        for warning in row["warnings"]:
            print(f"  warning: {warning}")
    by_name = {row["variant"]: row for row in figures}
    ok = ok and all(by_name[v]["prompt_chars"] <= BUDGET for v in ("final", "one-tool", "every-tool"))
    out = args.out or (Path(os.environ["OUT"]) / "llm_prompt_size.json" if os.environ.get("OUT") else None)
    if out is not None:
        out.write_text(json.dumps(figures, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
