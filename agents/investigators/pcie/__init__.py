"""pcie: link training, MaxReadReq, MaxPayload, ACS and AER of every GPU and the bridges above it.

Everything comes from sysfs (link attributes, AER counters, config space decoded by
:mod:`rigaudit.tools.pci`) and NVML; the kernel log's "limited by" lines are supporting evidence only.
``facts`` reads the evidence; the rules: ``link`` (pcie.link), ``payload`` (pcie.mrrs, pcie.mps), ``acs``
(pcie.acs) and ``aer`` (pcie.aer).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.pcie.acs import ACS_CHECK, judge_acs
from rigaudit.agents.investigators.pcie.aer import AER_CHECK, judge_aer
from rigaudit.agents.investigators.pcie.facts import AREA, PcieFacts, collect
from rigaudit.agents.investigators.pcie.link import PCIE_LINK_CHECK, judge_link
from rigaudit.agents.investigators.pcie.payload import (
    MAX_PAYLOAD_CHECK,
    MAX_READ_REQUEST_CHECK,
    judge_max_payload,
    judge_max_read_request,
)
from rigaudit.tools.schema.finding import Finding

ORDER = 40


def judge(facts: PcieFacts) -> list[Finding]:
    return [judge_link(facts), judge_max_read_request(facts), judge_max_payload(facts), judge_acs(facts), judge_aer(facts)]


INVESTIGATOR: Investigator[PcieFacts] = Investigator(
    area=AREA,
    title="PCIe links, payload sizes, ACS and errors",
    checks=(PCIE_LINK_CHECK, MAX_READ_REQUEST_CHECK, MAX_PAYLOAD_CHECK, ACS_CHECK, AER_CHECK),
    collect=collect,
    judge=judge,
)
