"""cuda: compute mode, MIG, memory held on the GPUs, ECC mode (all from NVML), other users' processes and MPS.

``facts`` reads the evidence (with ``processes``); the rules: ``modes`` (cuda.compute_mode, cuda.mig,
cuda.ecc_mode), ``memory`` (cuda.memory_in_use) and ``processes`` (cuda.foreign_processes, cuda.mps).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.cuda.facts import AREA, CudaFacts, collect
from rigaudit.agents.investigators.cuda.memory import MEMORY_IN_USE_CHECK, judge_memory_in_use
from rigaudit.agents.investigators.cuda.modes import (
    COMPUTE_MODE_CHECK,
    ECC_MODE_CHECK,
    MIG_CHECK,
    judge_compute_mode,
    judge_ecc_mode,
    judge_mig,
)
from rigaudit.agents.investigators.cuda.processes import (
    FOREIGN_PROCESSES_CHECK,
    MPS_DAEMON_CHECK,
    judge_foreign_processes,
    judge_mps_daemon,
)
from rigaudit.tools.schema.finding import Finding

ORDER = 60


def judge(f: CudaFacts) -> list[Finding]:
    return [
        judge_compute_mode(f),
        judge_mig(f),
        judge_memory_in_use(f),
        judge_ecc_mode(f),
        judge_foreign_processes(f.processes),
        judge_mps_daemon(f.processes),
    ]


INVESTIGATOR: Investigator[CudaFacts] = Investigator(
    area=AREA,
    title="CUDA compute mode, MIG, memory and ECC mode",
    checks=(COMPUTE_MODE_CHECK, MIG_CHECK, MEMORY_IN_USE_CHECK, ECC_MODE_CHECK, FOREIGN_PROCESSES_CHECK, MPS_DAEMON_CHECK),
    collect=collect,
    judge=judge,
)
