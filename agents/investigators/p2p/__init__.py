"""p2p: GPU peer-to-peer status and topology, and the P2P micro-benchmark's verdict.

``facts`` reads the evidence; the rules: ``status`` (p2p.status) and ``bandwidth`` (p2p.bandwidth).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.p2p.bandwidth import P2P_BANDWIDTH_CHECK, judge_p2p_bandwidth
from rigaudit.agents.investigators.p2p.facts import AREA, P2pFacts, collect
from rigaudit.agents.investigators.p2p.status import P2P_STATUS_CHECK, judge_p2p_status
from rigaudit.tools.schema.finding import Finding

ORDER = 90


def judge(f: P2pFacts) -> list[Finding]:
    return [judge_p2p_status(f), judge_p2p_bandwidth(f)]


INVESTIGATOR: Investigator[P2pFacts] = Investigator(
    area=AREA,
    title="GPU peer-to-peer status and bandwidth",
    checks=(P2P_STATUS_CHECK, P2P_BANDWIDTH_CHECK),
    collect=collect,
    judge=judge,
)
