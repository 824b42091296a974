"""nccl: NCCL overrides in config files, container configs and server environments, and the NCCL library in use.

``facts`` reads the evidence (with ``version`` and ``topo_facts``); the rules: ``env`` (nccl.env), ``version``
(nccl.version) and ``topo_file`` (nccl.topo_file).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.nccl.env import NCCL_ENV_CHECK, judge_nccl_env
from rigaudit.agents.investigators.nccl.facts import AREA, NcclFacts, collect
from rigaudit.agents.investigators.nccl.topo_file import NCCL_TOPO_FILE_CHECK, judge_topo_file
from rigaudit.agents.investigators.nccl.version import NCCL_VERSION_CHECK, judge_nccl_version
from rigaudit.tools.schema.finding import Finding

ORDER = 95


def judge(f: NcclFacts) -> list[Finding]:
    return [judge_nccl_env(f), judge_nccl_version(f.version), judge_topo_file(f)]


INVESTIGATOR: Investigator[NcclFacts] = Investigator(
    area=AREA,
    title="NCCL transport settings, library and topology file",
    checks=(NCCL_ENV_CHECK, NCCL_VERSION_CHECK, NCCL_TOPO_FILE_CHECK),
    collect=collect,
    judge=judge,
)
