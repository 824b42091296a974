"""nvlink: NVLink state per link and the links' error counters (PCIe-only cards: not applicable).

``facts`` reads the evidence; the rules: ``links`` (nvlink.links) and ``errors`` (nvlink.errors).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.nvlink.errors import NVLINK_ERRORS_CHECK, judge_errors
from rigaudit.agents.investigators.nvlink.facts import AREA, NvlinkFacts, collect
from rigaudit.agents.investigators.nvlink.links import NVLINK_LINKS_CHECK, judge_links
from rigaudit.tools.schema.finding import Finding

ORDER = 100


def judge(f: NvlinkFacts) -> list[Finding]:
    return [judge_links(f), judge_errors(f)]


INVESTIGATOR: Investigator[NvlinkFacts] = Investigator(
    area=AREA,
    title="NVLink links and errors",
    checks=(NVLINK_LINKS_CHECK, NVLINK_ERRORS_CHECK),
    collect=collect,
    judge=judge,
)
