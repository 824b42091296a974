"""runtime: the serving Python's torch build against the GPUs and the driver, its environment and its limits.

No interpreter is ever run (the policy denies interpreters given code): torch's ``version.py`` is read as a file,
found through the server process (its memory maps, its interpreter path) or well-known site-packages folders
(:mod:`rigaudit.agents.facts.python_env`). ``facts`` reads the evidence (with ``cuda`` and ``limits``); the rules:
``torch_build`` (runtime.torch_cuda), ``debug_env`` (runtime.env), ``cuda`` (runtime.cuda_driver_compat,
runtime.device_order) and ``limits`` (runtime.nofile, runtime.nproc).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.runtime.cuda import (
    CUDA_DRIVER_COMPAT_CHECK,
    DEVICE_ORDER_CHECK,
    judge_cuda_driver_compat,
    judge_device_order,
)
from rigaudit.agents.investigators.runtime.debug_env import DEBUG_ENV_CHECK, judge_debug_env
from rigaudit.agents.investigators.runtime.facts import AREA, RuntimeFacts, collect, no_torch_reason
from rigaudit.agents.investigators.runtime.limits import NOFILE_CHECK, NPROC_CHECK, judge_nofile, judge_nproc
from rigaudit.agents.investigators.runtime.torch_build import TORCH_CUDA_CHECK, judge_torch_cuda
from rigaudit.tools.schema.finding import Finding

ORDER = 120


def judge(f: RuntimeFacts) -> list[Finding]:
    return [
        judge_torch_cuda(f),
        judge_debug_env(f),
        judge_cuda_driver_compat(f.cuda, f.installs, no_torch_reason(f)),
        judge_device_order(f.cuda, f.scan.servers[:16], f.environs),
        judge_nofile(f.limits),
        judge_nproc(f.limits),
    ]


INVESTIGATOR: Investigator[RuntimeFacts] = Investigator(
    area=AREA,
    title="Serving runtime: torch and CUDA builds, environment, limits",
    checks=(TORCH_CUDA_CHECK, DEBUG_ENV_CHECK, CUDA_DRIVER_COMPAT_CHECK, DEVICE_ORDER_CHECK, NOFILE_CHECK, NPROC_CHECK),
    collect=collect,
    judge=judge,
)
