"""What an agent's prompts cost: the seed audit with a tool round in every agent stays within 150,000
characters (issue 18), and what the compact parts keep: judging, every rule finding, the problems' refs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from rigaudit.agents.llm.prompt import area_brief, judging_brief, summarize_findings, unwrapped
from rigaudit.agents.registry import area_names
from rigaudit.tools.schema.finding import Finding

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import llm_prompt_size

HEADROOM = 110_000
"""What one tool round in every agent may send (issue 36): the 150,000 bound with room to spare."""


def test_the_seed_audit_with_a_tool_round_in_every_agent_stays_within_its_bound() -> None:
    row = llm_prompt_size.measure(llm_prompt_size.SEED, "every-tool")
    assert row["requests"] == 2 * row["agents"] and row["answered"] == row["agents"]
    assert row["prompt_chars"] <= llm_prompt_size.BUDGET
    assert row["prompt_chars"] <= HEADROOM, f"{row['prompt_chars']:,} prompt characters: {row['by_part']}"
    assert sum(row["by_part"].values()) == row["prompt_chars"]  # the breakdown accounts for every character
    assert all(chars >= 0 for chars in row["by_part"].values())


def test_a_follow_up_keeps_the_judging_and_drops_the_reads() -> None:
    for area in area_names():
        brief = area_brief(area)
        judging = judging_brief(brief)
        assert "## What to read" in brief or "## Checks" in brief
        assert "What to read" not in judging and "Useful read-only commands" not in judging
        assert "## Judging" in judging or "## Checks" in judging, area
        kept = [part.strip() for part in re.split(r"(?m)^(?=## )", brief) if part.startswith("## ") and "read" not in part[:40]]
        assert kept and all(part in judging for part in kept), area  # every judging section, pitfall, "do not"


def test_a_follow_up_leaves_out_the_judging_of_checks_the_rules_settled() -> None:
    brief = area_brief("gpu")
    assert "- `gpu.xid`:" in judging_brief(brief) and "- `gpu.thermals`:" in judging_brief(brief)
    kept = judging_brief(brief, settled={"gpu.xid"})
    assert "- `gpu.xid`:" not in kept and "- `gpu.thermals`:" in kept and "## Pitfalls" in kept


def test_briefs_are_sent_unwrapped() -> None:
    text = "## Judging\n- one point\n  continued here\n- another\n\nA paragraph\nwrapped.\n"
    assert unwrapped(text) == "## Judging\n- one point continued here\n- another\n\nA paragraph wrapped.\n"


def _finding(check: str, status: str, **extra: object) -> Finding:
    return Finding(check=check, area="kernel", status=status, title=f"title of {check}", **extra)  # type: ignore[arg-type]


def test_rule_findings_are_one_line_each_and_a_follow_up_names_the_settled_ones() -> None:
    problem = _finding(
        "kernel.iommu",
        "problem",
        severity="high",
        observed="DMA-FQ on 8/8 groups",
        expected="identity",
        evidence=("file:/proc/cmdline", "file:/sys/kernel/iommu_groups/1/type"),
    )
    settled = [_finding(f"kernel.ok{i}", "ok", observed=f"fine {i}") for i in range(4)]
    opening = summarize_findings([*settled, problem], 1800).splitlines()
    assert opening[0].startswith("- kernel.iommu: problem/high: title of kernel.iommu; seen DMA-FQ")
    assert "expected identity" in opening[0] and "refs file:/proc/cmdline, file:/sys/kernel/iommu_groups/1/type" in opening[0]
    assert len(opening) == 5 and all("seen fine" in line for line in opening[1:])
    followup = summarize_findings([*settled, problem], 1200, followup=True).splitlines()
    assert followup[0] == opening[0]  # the problem as it was sent, with its refs
    assert followup[1:] == ["- ok: kernel.ok0, kernel.ok1, kernel.ok2, kernel.ok3"]
