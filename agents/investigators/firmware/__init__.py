"""firmware: what the UEFI/BIOS decided, as seen from Linux: BAR1 size, VBIOS versions, CPPC.

``facts`` reads the evidence; the rules: ``rebar`` (firmware.rebar), ``vbios`` (firmware.vbios_consistency),
``cppc`` (firmware.cppc).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.firmware.cppc import CPPC_CHECK, judge_cppc
from rigaudit.agents.investigators.firmware.facts import AREA, FirmwareFacts, collect
from rigaudit.agents.investigators.firmware.rebar import REBAR_CHECK, judge_rebar
from rigaudit.agents.investigators.firmware.vbios import VBIOS_CONSISTENCY_CHECK, judge_vbios
from rigaudit.tools.schema.finding import Finding

ORDER = 10


def judge(facts: FirmwareFacts) -> list[Finding]:
    return [judge_rebar(facts), judge_vbios(facts), judge_cppc(facts)]


INVESTIGATOR: Investigator[FirmwareFacts] = Investigator(
    area=AREA,
    title="Firmware settings seen from Linux",
    checks=(REBAR_CHECK, VBIOS_CONSISTENCY_CHECK, CPPC_CHECK),
    collect=collect,
    judge=judge,
)
