"""gpu: health of each GPU: temperature headroom, clock event reasons, ECC errors, Xid events, GSP errors,
application clocks, spare memory.

The facts live in :mod:`rigaudit.agents.investigators._gpu_facts`; the rules in ``_gpu_thermals`` (gpu.thermals),
``_gpu_clocks`` (gpu.clocks), ``_gpu_ecc`` (gpu.ecc_errors), ``_gpu_xid`` (gpu.xid), ``_gpu_gsp`` (gpu.gsp),
``_gpu_app_clocks`` (gpu.app_clocks) and ``_gpu_retired`` (gpu.retired_pages).
"""

from __future__ import annotations

from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._gpu_app_clocks import judge_app_clocks
from rigaudit.agents.investigators._gpu_clocks import BAD_CLOCK_BITS, CLOCK_REASONS, judge_clocks
from rigaudit.agents.investigators._gpu_ecc import judge_ecc_errors
from rigaudit.agents.investigators._gpu_facts import AREA, GPU_MAX, SLOWDOWN, GpuHealthFacts, collect, int_values
from rigaudit.agents.investigators._gpu_gsp import judge_gsp
from rigaudit.agents.investigators._gpu_retired import judge_retired_pages
from rigaudit.agents.investigators._gpu_thermals import THERMAL_MARGIN_C, judge_thermals
from rigaudit.agents.investigators._gpu_xid import APPLICATION_XIDS, CRITICAL_XIDS, XID_MEANING, XidEvent, judge_xid, parse_xids
from rigaudit.tools.model.finding import Finding

__all__ = [
    "APPLICATION_XIDS",
    "AREA",
    "BAD_CLOCK_BITS",
    "CHECKS",
    "CLOCK_REASONS",
    "CRITICAL_XIDS",
    "GPU_MAX",
    "INVESTIGATOR",
    "SLOWDOWN",
    "THERMAL_MARGIN_C",
    "XID_MEANING",
    "GpuHealthFacts",
    "XidEvent",
    "collect",
    "judge",
    "judge_clocks",
    "judge_ecc_errors",
    "judge_thermals",
    "judge_xid",
    "parse_xids",
]
CHECKS = ("gpu.thermals", "gpu.clocks", "gpu.ecc_errors", "gpu.xid", "gpu.gsp", "gpu.app_clocks", "gpu.retired_pages")


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


DOCS = {
    "gpu.thermals": CheckDoc(
        "GPU temperature headroom",
        "NVML temperature and slowdown / max operating thresholds",
        "within 10 °C of slowdown",
        "cooling: airflow, fan profile, inlet temperature",
        ("hardware",),
    ),
    "gpu.clocks": CheckDoc(
        "GPU clock event reasons",
        "NVML current clocks event reasons",
        "HW slowdown (0x8), SW/HW thermal (0x20/0x40) or HW power brake (0x80) set; SW power cap and idle are normal",
        "cooling, power delivery",
        ("hardware",),
    ),
    "gpu.ecc_errors": CheckDoc(
        "GPU memory errors (row remapping, ECC, retired pages)",
        "NVML remapped rows, volatile uncorrected ECC count, retired pages pending",
        "remap pending (reset needed), remap failure, or uncorrectable errors",
        "GPU reset or reboot; RMA on remap failure",
        ("reboot", "hardware"),
    ),
    "gpu.xid": CheckDoc(
        "Xid events in the kernel log",
        "kernel log `NVRM: Xid` lines",
        "any Xid; 79, 48/94/95, 63/64, 74 are critical",
        "per Xid: restart, reset, reboot or hardware",
        ("restart", "reboot", "hardware"),
    ),
    "gpu.gsp": CheckDoc(
        "GSP firmware errors",
        "kernel log: NVRM GSP timeout/error lines (`_kgspRpcRecvPoll`, heartbeat, bootstrap failures), Xid 119/120",
        "any GSP error: the GPU stops answering until reset",
        "reset or reboot; newest driver of the branch",
        ("reboot",),
    ),
    "gpu.app_clocks": CheckDoc(
        "Application and locked clocks",
        "NVML `nvmlDeviceGetApplicationsClock` vs `nvmlDeviceGetDefaultApplicationsClock` (graphics, memory); clock event "
        "reason 0x2",
        "application clocks below their defaults, or clocks held by the applications-clocks (locked clocks) setting",
        "`nvidia-smi -rac`, `nvidia-smi -rgc` (by a person)",
        ("runtime",),
    ),
    "gpu.retired_pages": CheckDoc(
        "Spare memory used up (retired pages, spare rows)",
        "NVML retired pages (single- and double-bit causes), remapped rows, row-remapper histogram",
        "a memory bank with no spare row left (high); banks low on spares or retired pages (low)",
        "plan an RMA",
        ("hardware",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA,
    title="GPU health: thermals, clocks, memory errors, Xids, GSP",
    checks=CHECKS,
    collect=collect,
    judge=judge,
    docs=DOCS,
)
