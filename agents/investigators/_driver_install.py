"""driver.library_mismatch, driver.dkms, driver.secure_boot: is the installed driver the one that runs, and can it load?

The facts live in :mod:`rigaudit.agents.investigators._driver_install_facts`; the rules in ``_driver_library``
(driver.library_mismatch), ``_driver_dkms`` (driver.dkms) and ``_driver_secure_boot`` (driver.secure_boot).
"""

from __future__ import annotations

from rigaudit.agents.investigators._driver_dkms import judge_dkms
from rigaudit.agents.investigators._driver_install_facts import (
    AREA,
    DKMS_TREE,
    EFI,
    LIB_DIRS,
    LIB_LINKS,
    LOCKDOWN,
    MODULES_ROOT,
    SECURE_BOOT,
    InstallFacts,
    KernelModules,
    UserLibrary,
    collect_install,
)
from rigaudit.agents.investigators._driver_library import judge_library_mismatch
from rigaudit.agents.investigators._driver_secure_boot import judge_secure_boot, secure_boot_state

__all__ = [
    "AREA",
    "DKMS_TREE",
    "EFI",
    "LIB_DIRS",
    "LIB_LINKS",
    "LOCKDOWN",
    "MODULES_ROOT",
    "SECURE_BOOT",
    "InstallFacts",
    "KernelModules",
    "UserLibrary",
    "collect_install",
    "judge_dkms",
    "judge_library_mismatch",
    "judge_secure_boot",
    "secure_boot_state",
]
