"""Firmware knobs judged on their premise: CPPC serves only amd_pstate, so its absence matters on a kernel that has
amd_pstate (Linux 5.17+, or CONFIG_X86_AMD_PSTATE in the kernel's build configuration), and nowhere else."""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.investigators.firmware import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_tree, set_file


def cppc(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)["firmware.cppc"]


def test_cppc_off_on_a_kernel_without_amd_pstate_is_no_problem() -> None:
    """Before: medium ('enable CPPC in the BIOS') on DGX OS's 5.15 kernel, where nothing would use it."""
    found = cppc(snapshot(faults.cppc_off(ARCHETYPES["dgx-a100-mig"])))
    assert found.status == "not_applicable", (found.status, found.observed)
    assert "5.15.0-1063-nvidia has no amd_pstate" in found.observed and "5.17" in found.observed


def test_cppc_off_on_a_kernel_with_amd_pstate_is_the_medium() -> None:
    found = cppc(snapshot(faults.cppc_off(ARCHETYPES["epyc-nps4-l40s"])))
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert found.fix is not None and "BIOS" in found.fix.summary


def test_an_enterprise_kernel_without_its_config_is_unknown(tmp_path: Path) -> None:
    """An .el9 kernel backports drivers, so its version tells nothing: without /boot/config-RELEASE the verdict waits."""
    spec = faults.cppc_off(ARCHETYPES["epyc-nps4-l40s"])
    root = light_copy(snapshot(spec), tmp_path / "copy")
    release = "5.14.0-427.13.1.el9_4.x86_64"
    set_file(root, "/proc/sys/kernel/osrelease", release + "\n")
    remove_tree(root, "/boot")
    found = cppc(root)
    assert found.status == "unknown", (found.status, found.observed)
    assert "CONFIG_X86_AMD_PSTATE" in found.observed
