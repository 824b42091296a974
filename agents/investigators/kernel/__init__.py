"""kernel: the boot command line, the runtime kernel knobs that matter to GPU inference hosts, and whether the
running kernel is right for the GPU driver and the CPU's frequency driver.

``facts`` gathers ``params`` (command line, THP, swappiness, IOMMU groups) and ``version``; the rules: ``iommu``
(kernel.iommu), ``thp`` (kernel.thp), ``swappiness`` (kernel.swappiness), ``cmdline`` (kernel.cmdline_pcie) and
``version`` (kernel.version), ``grace_boot`` (kernel.grace_boot).
"""

from __future__ import annotations

from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.kernel.cmdline import CMDLINE_PCIE_CHECK, judge_cmdline_pcie
from rigaudit.agents.investigators.kernel.facts import KernelFacts, collect
from rigaudit.agents.investigators.kernel.grace_boot import GRACE_BOOT_CHECK, judge_grace_boot
from rigaudit.agents.investigators.kernel.iommu import IOMMU_CHECK, judge_iommu
from rigaudit.agents.investigators.kernel.params import AREA
from rigaudit.agents.investigators.kernel.swappiness import SWAPPINESS_CHECK, judge_swappiness
from rigaudit.agents.investigators.kernel.thp import THP_CHECK, judge_thp
from rigaudit.agents.investigators.kernel.version import KERNEL_VERSION_CHECK, judge_kernel_version
from rigaudit.tools.schema.finding import Finding

ORDER = 20


def judge(facts: KernelFacts) -> list[Finding]:
    params = facts.params
    return [
        judge_iommu(params),
        judge_thp(params),
        judge_swappiness(params),
        judge_cmdline_pcie(params),
        judge_kernel_version(facts.version),
        judge_grace_boot(params),
    ]


INVESTIGATOR: Investigator[KernelFacts] = Investigator(
    area=AREA,
    title="Kernel command line, runtime knobs and version",
    checks=(IOMMU_CHECK, THP_CHECK, SWAPPINESS_CHECK, CMDLINE_PCIE_CHECK, KERNEL_VERSION_CHECK, GRACE_BOOT_CHECK),
    collect=collect,
    judge=judge,
)
