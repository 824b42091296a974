"""Fixes on an image-based OS name its own configuration (the seventh review's F6, s06 on Talos).

Talos has no systemd and no writable /etc: ``systemctl enable`` and ``/etc/sysctl.d`` are lines that cannot run.
Bottlerocket sets sysctls through its settings API. A distribution keeps its systemctl and sysctl.d advice.
"""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.facts.os_image import OsImage, parse_os_release
from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.agents.investigators.kernel import INVESTIGATOR as KERNEL
from rigaudit.agents.investigators.numa import INVESTIGATOR as NUMA
from rigaudit.agents.persist import module_persist, service_persist, sysctl_persist
from rigaudit.tools.schema.finding import CommandAction, Finding, ServiceStartAction
from tests.hostgen import ARCHETYPES, faults, osimage
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.support.investigators import audit_snapshot

HGX = faults.persistence_off(faults.numa_balancing_on(ARCHETYPES["hgx-h100-jammy"]))


def _said(finding: Finding) -> str:
    assert finding.fix is not None
    fix = finding.fix
    actions = " ".join(a.description if isinstance(a, CommandAction) else repr(a) for a in fix.actions)
    return " ".join((fix.summary, actions, fix.verify, fix.revert, fix.persist))


def test_talos_fixes_name_the_machine_config_not_systemctl_or_sysctl_d() -> None:
    root = snapshot(osimage.talos(HGX))
    balancing = audit_snapshot(NUMA, root)["numa.balancing"]
    assert (balancing.status, balancing.severity) == ("problem", "medium"), balancing.observed
    assert balancing.fix is not None and "> /etc/sysctl.d" not in balancing.fix.persist
    assert '"machine": {"sysctls": {"kernel.numa_balancing": "0"}}' in balancing.fix.persist
    assert "talosctl patch machineconfig" in balancing.fix.persist
    os_premise = next(p for p in balancing.premises if p.name == "os")
    assert os_premise.state == "held" and os_premise.value.startswith("Talos Linux")

    persistence = audit_snapshot(DRIVER, root)["driver.persistence"]
    assert (persistence.status, persistence.severity) == ("problem", "medium"), persistence.observed
    said = _said(persistence)
    assert "systemctl" not in said.replace("not systemctl", ""), said
    assert persistence.fix is not None and not any(isinstance(a, ServiceStartAction) for a in persistence.fix.actions)
    assert "system extension" in said and "talosctl services" in said


def test_bottlerocket_sets_sysctls_through_its_api() -> None:
    spec = osimage.bottlerocket(faults.thp_always(ARCHETYPES["hgx-h200-noble"]))
    spec = faults.numa_balancing_on(spec)
    finding = audit_snapshot(NUMA, snapshot(spec))["numa.balancing"]
    assert finding.fix is not None and "apiclient set --json" in finding.fix.persist
    assert '"settings": {"kernel": {"sysctl": {"kernel.numa_balancing": "0"}}}' in finding.fix.persist


def test_a_distribution_keeps_systemctl_and_sysctl_d() -> None:
    root = snapshot(HGX)
    balancing = audit_snapshot(NUMA, root)["numa.balancing"]
    assert balancing.fix is not None and "/etc/sysctl.d/90-rigaudit-numa-balancing.conf" in balancing.fix.persist
    persistence = audit_snapshot(DRIVER, root)["driver.persistence"]
    assert persistence.fix is not None and persistence.fix.persist == "systemctl enable nvidia-persistenced"
    swap = audit_snapshot(KERNEL, root)["kernel.swappiness"]
    assert next(p for p in swap.premises if p.name == "os").value == "ubuntu"


def test_an_unknown_read_only_image_says_so() -> None:
    image = OsImage("acme", None, None, True, "init", "ID=acme, / read-only, PID 1 init")
    assert image.image_based
    assert "this OS is image-based" in sysctl_persist("vm.swappiness", "10", image)
    assert not service_persist("nvidia-persistenced", image).startswith("systemctl")


def test_fedora_coreos_is_known_by_its_variant() -> None:
    fields = parse_os_release('NAME="Fedora Linux"\nID=fedora\nVARIANT_ID=coreos\n')
    assert (fields["ID"], fields["VARIANT_ID"]) == ("fedora", "coreos")


def test_talos_boot_time_writes_and_modules_name_the_machine_config() -> None:
    from rigaudit.agents.investigators.power import INVESTIGATOR as POWER

    root = snapshot(osimage.talos(HGX))
    cstates = audit_snapshot(POWER, root)["power.cstates"]
    assert cstates.fix is not None and "/etc/systemd/system" not in cstates.fix.persist
    assert "machine.sysfs" in cstates.fix.persist
    image = OsImage("talos", None, "talos", True, "machined", "ID=talos")
    assert '"modules": [{"name": "nvidia_peermem"}]' in module_persist("nvidia_peermem", image)


def test_apply_persist_writes_no_etc_files_on_talos(tmp_path: Path) -> None:
    import anyio

    from rigaudit.orchestrator.change.apply import ApplyOptions, apply_plan
    from rigaudit.orchestrator.change.approval import StepApprover
    from rigaudit.tools.hosts.snapshot import SnapshotHost
    from rigaudit.tools.schema.finding import SysctlAction
    from rigaudit.tools.schema.plan import Plan, PlanStep
    from tests.hostgen import write

    root = write(osimage.talos(HGX), tmp_path / "talos")
    step = PlanStep(
        id="numa.balancing",
        check="numa.balancing",
        priority="P2",
        kind="runtime",
        where="host",
        title="balancing",
        actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
    )
    plan = Plan(steps=(step,))
    approver = StepApprover(plan.digest(), assume_yes=True, interactive=False, who="test@here")

    async def main() -> list[str]:
        host = SnapshotHost(root, writable=True)
        options = ApplyOptions(persist=True)
        report = await apply_plan(host, plan, approver=approver, journal_path=tmp_path / "j.jsonl", options=options)
        assert report.persist == []
        return report.persist_notes

    notes = anyio.run(main)
    assert any("persist files not written: Talos Linux" in n for n in notes), notes
    assert not (root / "files" / "etc" / "sysctl.d" / "90-rigaudit.conf").exists()


def test_an_ostree_host_changes_its_boot_line_with_rpm_ostree_kargs_not_grubby() -> None:
    """Before: grubby --update-kernel=ALL on RHEL image mode, which does not change an ostree deployment's line."""
    plain = faults.iommu_translated(KINDS["rhel9-hgx-h100-tuned"])
    image = audit_snapshot(KERNEL, snapshot(osimage.rhel_image_mode(plain)))["kernel.iommu"]
    assert image.status == "problem" and image.fix is not None, image.observed
    said = _said(image) + repr(image.fix.actions)
    assert "rpm-ostree kargs" in said and "grubby" not in said, said
    rhel = audit_snapshot(KERNEL, snapshot(plain))["kernel.iommu"]
    assert "grubby" in _said(rhel) + repr(rhel.fix.actions if rhel.fix else ())
