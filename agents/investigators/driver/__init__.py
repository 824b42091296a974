"""driver: the NVIDIA kernel driver, its modules, its services and its installation.

``facts`` reads the evidence (with ``install_facts``, ``fabric`` and ``imex_facts``); the rules: ``version``
(driver.version), ``services`` (driver.persistence, driver.fabricmanager), ``imex`` (driver.imex), ``modules``
(driver.peermem, driver.nouveau, driver.uvm), ``library`` (driver.library_mismatch), ``dkms`` (driver.dkms),
``secure_boot`` (driver.secure_boot), ``fabric`` (driver.fabricmanager_version), ``vgpu_license``
(driver.vgpu_license), ``confcompute`` (driver.confidential_computing) and ``cdi_spec`` (driver.cdi_spec).
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.nvidia_driver import kernel_version
from rigaudit.agents.investigator import Investigator
from rigaudit.agents.investigators.driver.cdi_spec import CDI_SPEC_CHECK, judge_cdi_spec
from rigaudit.agents.investigators.driver.confcompute import CC_CHECK, judge_confidential_computing
from rigaudit.agents.investigators.driver.dkms import DKMS_CHECK, judge_dkms
from rigaudit.agents.investigators.driver.fabric import FABRICMANAGER_VERSION_CHECK, judge_fabricmanager_version
from rigaudit.agents.investigators.driver.facts import AREA, DriverFacts, collect, rack_gpus
from rigaudit.agents.investigators.driver.imex import IMEX_CHECK, judge_imex
from rigaudit.agents.investigators.driver.library import LIBRARY_MISMATCH_CHECK, judge_library_mismatch
from rigaudit.agents.investigators.driver.modules import (
    NOUVEAU_CHECK,
    PEERMEM_CHECK,
    UVM_CHECK,
    judge_nouveau,
    judge_peermem,
    judge_uvm,
)
from rigaudit.agents.investigators.driver.secure_boot import SECURE_BOOT_CHECK, judge_secure_boot
from rigaudit.agents.investigators.driver.services import (
    FABRICMANAGER_CHECK,
    PERSISTENCE_CHECK,
    judge_fabricmanager,
    judge_persistence,
)
from rigaudit.agents.investigators.driver.version import DRIVER_VERSION_CHECK, judge_driver_version
from rigaudit.agents.investigators.driver.vgpu_license import VGPU_LICENSE_CHECK, judge_vgpu_license
from rigaudit.tools.schema.finding import Finding

ORDER = 50


def judge(facts: DriverFacts) -> list[Finding]:
    return [
        judge_driver_version(facts),
        judge_persistence(facts),
        judge_peermem(facts),
        judge_nouveau(facts),
        judge_uvm(facts),
        judge_fabricmanager(facts),
        judge_imex(facts),
        judge_library_mismatch(facts.install),
        judge_dkms(facts.install),
        judge_secure_boot(facts.install),
        judge_fabricmanager_version(
            facts.platform,
            _switches(facts),
            facts.nvml_version or _kernel(facts),
            facts.fabric_version,
            facts.install.pending.installed,
            down=facts.fabricmanager is not None and facts.fabricmanager.state not in (None, "active"),
            rack=bool(rack_gpus(facts)),
            operator=facts.install.origin.origin == "operator",
        ),
        judge_vgpu_license(facts),
        judge_confidential_computing(facts),
        judge_cdi_spec(facts),
    ]


def _kernel(facts: DriverFacts) -> str | None:
    return kernel_version(facts.proc_version)[0] or facts.module_version


def _switches(facts: DriverFacts) -> str | None:
    """How the NVSwitches were seen, or None on a host without them."""
    if facts.fabricmanager is None:
        return None
    switches_dev = [e for e in facts.dev or () if re.fullmatch(r"nvidia-nvswitch\d+", e)]
    switches = list(facts.nvswitch_pci) or switches_dev
    return f"{len(switches)} NVSwitches" if switches else "an NVSwitch fabric (NVML)"


INVESTIGATOR: Investigator[DriverFacts] = Investigator(
    area=AREA,
    title="NVIDIA driver, modules and services",
    checks=(
        DRIVER_VERSION_CHECK,
        PERSISTENCE_CHECK,
        PEERMEM_CHECK,
        NOUVEAU_CHECK,
        UVM_CHECK,
        FABRICMANAGER_CHECK,
        IMEX_CHECK,
        LIBRARY_MISMATCH_CHECK,
        DKMS_CHECK,
        SECURE_BOOT_CHECK,
        FABRICMANAGER_VERSION_CHECK,
        VGPU_LICENSE_CHECK,
        CC_CHECK,
        CDI_SPEC_CHECK,
    ),
    collect=collect,
    judge=judge,
)
