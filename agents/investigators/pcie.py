"""pcie: link training, MaxReadReq, MaxPayload, ACS and AER of every GPU and the bridges above it.

Everything comes from sysfs (link attributes, AER counters, config space decoded by
:mod:`rigaudit.tools.pci`) and NVML; the kernel log's "limited by" lines are supporting evidence only.
The facts live in :mod:`rigaudit.agents.investigators._pcie_facts`; the rules in ``_pcie_link`` (pcie.link),
``_pcie_payload`` (pcie.mrrs, pcie.mps), ``_pcie_acs`` (pcie.acs) and ``_pcie_aer`` (pcie.aer).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators._pcie_acs import judge_acs
from rigaudit.agents.investigators._pcie_aer import judge_aer
from rigaudit.agents.investigators._pcie_facts import AREA, PcieFacts, collect
from rigaudit.agents.investigators._pcie_link import judge_link
from rigaudit.agents.investigators._pcie_payload import judge_mps, judge_mrrs
from rigaudit.tools.model.finding import Finding

__all__ = ["CHECKS", "INVESTIGATOR", "PcieFacts", "collect", "judge"]
CHECKS = ("pcie.link", "pcie.mrrs", "pcie.mps", "pcie.acs", "pcie.aer")


def judge(facts: PcieFacts) -> list[Finding]:
    return [judge_link(facts), judge_mrrs(facts), judge_mps(facts), judge_acs(facts), judge_aer(facts)]


INVESTIGATOR: Investigator[PcieFacts] = Investigator(
    area=AREA, title="PCIe links, payload sizes, ACS and errors", checks=CHECKS, collect=collect, judge=judge
)
