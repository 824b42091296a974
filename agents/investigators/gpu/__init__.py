"""gpu: health of each GPU: temperature headroom, clock event reasons, ECC errors, Xid events, GSP errors,
application clocks, spare memory.

``facts`` reads the evidence (with ``app_clocks`` and ``retired``); the rules: ``thermals`` (gpu.thermals),
``clocks`` (gpu.clocks), ``ecc`` (gpu.ecc_errors), ``xid`` (gpu.xid), ``gsp`` (gpu.gsp), ``app_clocks``
(gpu.app_clocks) and ``retired`` (gpu.retired_pages).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.gpu.app_clocks import APP_CLOCKS_CHECK, judge_app_clocks
from rigaudit.agents.investigators.gpu.clocks import CLOCKS_CHECK, judge_clocks
from rigaudit.agents.investigators.gpu.ecc import ECC_ERRORS_CHECK, judge_ecc_errors
from rigaudit.agents.investigators.gpu.facts import AREA, GpuHealthFacts, collect, int_values
from rigaudit.agents.investigators.gpu.gsp import GSP_CHECK, judge_gsp
from rigaudit.agents.investigators.gpu.retired import RETIRED_PAGES_CHECK, judge_retired_pages
from rigaudit.agents.investigators.gpu.thermals import THERMALS_CHECK, judge_thermals
from rigaudit.agents.investigators.gpu.xid import XID_CHECK, judge_xid
from rigaudit.tools.schema.finding import Finding

ORDER = 70


def judge(f: GpuHealthFacts) -> list[Finding]:
    reads = f.reasons if int_values(f.reasons) else f.throttle
    return [
        judge_thermals(f),
        judge_clocks(f),
        judge_ecc_errors(f),
        judge_xid(f),
        judge_gsp(f.dmesg, f.inventory, f.platform, f.proc_version),
        judge_app_clocks(f.app_clocks, int_values(reads), reads.refs),
        judge_retired_pages(f.retired, f.remapped),
    ]


INVESTIGATOR: Investigator[GpuHealthFacts] = Investigator(
    area=AREA,
    title="GPU health: thermals, clocks, memory errors, Xids, GSP",
    checks=(THERMALS_CHECK, CLOCKS_CHECK, ECC_ERRORS_CHECK, XID_CHECK, GSP_CHECK, APP_CLOCKS_CHECK, RETIRED_PAGES_CHECK),
    collect=collect,
    judge=judge,
)
