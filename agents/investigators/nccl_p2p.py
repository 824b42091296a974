"""nccl_p2p: GPU peer-to-peer status and topology, the P2P micro-benchmark's verdict, NCCL overrides.

The facts live in :mod:`rigaudit.agents.investigators._nccl_facts`; the rules in ``_nccl_p2p_status`` (p2p.status),
``_nccl_p2p_bandwidth`` (p2p.bandwidth), ``_nccl_env`` (nccl.env) and ``_nccl_version`` (nccl.version).
"""

from __future__ import annotations

from rigaudit.agents.investigator import CheckDoc, Investigator
from rigaudit.agents.investigators._nccl_env import judge_env
from rigaudit.agents.investigators._nccl_facts import (
    AREA,
    BENCH_FILE,
    BENCH_SCHEMA,
    IB_CLASS,
    NCCL_CONF_FILES,
    P2P_READ,
    P2P_WRITE,
    EnvSource,
    NcclP2pFacts,
    Pair,
    collect,
    parse_nccl_conf,
)
from rigaudit.agents.investigators._nccl_p2p_bandwidth import SLOW_FRACTION, BenchPair, judge_bandwidth, parse_bench
from rigaudit.agents.investigators._nccl_p2p_status import ANCESTOR, P2P_STATUS, judge_status
from rigaudit.agents.investigators._nccl_version import judge_nccl_version
from rigaudit.tools.model.finding import Finding

__all__ = [
    "ANCESTOR",
    "AREA",
    "BENCH_FILE",
    "BENCH_SCHEMA",
    "CHECKS",
    "IB_CLASS",
    "INVESTIGATOR",
    "NCCL_CONF_FILES",
    "P2P_READ",
    "P2P_STATUS",
    "P2P_WRITE",
    "SLOW_FRACTION",
    "BenchPair",
    "EnvSource",
    "NcclP2pFacts",
    "Pair",
    "collect",
    "judge",
    "judge_bandwidth",
    "judge_env",
    "judge_status",
    "parse_bench",
    "parse_nccl_conf",
]
CHECKS = ("p2p.status", "p2p.bandwidth", "nccl.env", "nccl.version")


def judge(f: NcclP2pFacts) -> list[Finding]:
    return [judge_status(f), judge_bandwidth(f), judge_env(f), judge_nccl_version(f.version)]


DOCS = {
    "p2p.status": CheckDoc(
        "GPU peer-to-peer status",
        "NVML P2P status (read, write) for each GPU pair; NVML common ancestor",
        "a pair reports anything but OK",
        "per cause: ACS, IOMMU, driver regkey",
        ("runtime", "reboot", "firmware"),
    ),
    "p2p.bandwidth": CheckDoc(
        "GPU peer-to-peer bandwidth and data check",
        "the P2P micro-benchmark's result (`/var/tmp/rigaudit/p2p.json`)",
        "a pair far below its link, slower than staging through the host, or corrupting data",
        "per cause",
        ("runtime", "reboot", "hardware"),
    ),
    "nccl.env": CheckDoc(
        "NCCL overrides in configs and server environments",
        "`/etc/nccl.conf`, `~/.nccl.conf`, LXC `lxc.environment`, `/proc/PID/environ` of the servers",
        "`NCCL_P2P_DISABLE=1`, `NCCL_P2P_LEVEL=LOC`, `NCCL_SHM_DISABLE=1`, `NCCL_IB_DISABLE=1` with an IB NIC",
        "remove the override",
        ("restart",),
    ),
    "nccl.version": CheckDoc(
        "NCCL library vs the torch build",
        "torch's wheel METADATA (`Requires-Dist: nvidia-nccl-cuXX==`), the nvidia-nccl wheel's dist-info, the libnccl the "
        "server maps (`/proc/PID/maps`)",
        "the NCCL loaded or installed differs from the one torch pins (medium when older or missing)",
        "install the pinned nvidia-nccl wheel; drop LD_LIBRARY_PATH overrides",
        ("restart",),
    ),
}


INVESTIGATOR = Investigator(
    area=AREA, title="GPU peer-to-peer and NCCL transport settings", checks=CHECKS, collect=collect, judge=judge, docs=DOCS
)
