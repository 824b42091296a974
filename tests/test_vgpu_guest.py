"""An NVIDIA vGPU guest (NVML virtualization mode VGPU): the physical GPU's facts are the hypervisor's.

NVIDIA presents a vGPU to the guest like a passed-through GPU, but properties of the physical board do not apply to
it: NVML answers NOT_SUPPORTED for sensors, power, the PCIe link, clock reasons, row remapping and MIG, the BAR1 is
the vGPU manager's window, and there is no P2P over PCIe between vGPUs. A rule says where to read those (the
hypervisor) instead of calling the board ECC-less, its link full, its BAR1 a BIOS setting; the guest's own concern
is its licence.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.check import CheckResult
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.archetypes import vllm
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import GpuSpec, HostSpec
from tests.support.audits import audited

H100 = ARCHETYPES["kvm-vgpu-h100-guest"]
L40S = replace(
    H100,
    name="kvm-vgpu-l40s-guest",
    gpus=GpuSpec("l40s", 4, vgpu="48C"),
    processes=(vllm("/models/Llama-3.1-70B-Instruct-AWQ", (0, 1, 2, 3), mib=42000),),
)
DOCKER = replace(H100, name="docker-in-vgpu-guest", hostname="7d1e0c9b2a33", platform=replace(H100.platform, container="docker"))
GUESTS = [H100, L40S, DOCKER]
PHYSICAL = ("pcie.link", "gpu.thermals", "gpu.clocks", "gpu.app_clocks", "gpu.retired_pages", "power.gpu_power_limit")


def audit(spec: HostSpec) -> AuditResult:
    return audited(spec)


@pytest.mark.parametrize("spec", GUESTS, ids=[s.name for s in GUESTS])
def test_the_physical_gpus_facts_are_sent_to_the_hypervisor(spec: HostSpec) -> None:
    """Before: pcie.link ok at 'full link x16' (the emulated config space), gpu.retired_pages n/a 'no ECC memory',
    firmware.rebar a BIOS fix for the vGPU's 256 MiB window."""
    by_check = {f.check: f for f in audit(spec).findings}
    for check in PHYSICAL:
        f = by_check[check]
        assert f.status == "unknown" and "NVIDIA vGPUs" in f.observed and "hypervisor" in f.observed, (check, f.observed)
    for check in ("firmware.rebar", "cuda.mig"):
        f = by_check[check]
        assert f.status == "not_applicable" and "NVIDIA vGPUs" in f.observed, (check, f.observed)


@pytest.mark.parametrize("spec", GUESTS, ids=[s.name for s in GUESTS])
def test_vgpus_have_no_p2p_over_pcie_and_the_fix_is_on_the_hypervisor(spec: HostSpec) -> None:
    p2p = next(f for f in audit(spec).findings if f.check == "p2p.status")
    assert p2p.status == "problem" and p2p.severity == "medium", p2p.observed
    assert "NVIDIA vGPUs" in p2p.explanation and p2p.fix is not None and p2p.fix.where == "hypervisor"
    words = " ".join(getattr(a, "description", "") for a in p2p.fix.actions)
    assert "pass the GPUs through" in words and "x-nv-gpudirect-clique" not in words


@pytest.mark.parametrize("spec", GUESTS, ids=[s.name for s in GUESTS])
def test_a_vgpu_without_its_licence_is_high_and_a_licensed_one_ok(spec: HostSpec) -> None:
    licensed = next(f for f in audit(spec).findings if f.check == "driver.vgpu_license")
    assert licensed.status == "ok" and "NVIDIA Virtual Compute Server" in licensed.observed, licensed.observed
    missing = next(f for f in audit(faults.vgpu_unlicensed(spec)).findings if f.check == "driver.vgpu_license")
    assert missing.status == "problem" and missing.severity == "high", missing.observed
    assert "20-minute grace period" in missing.explanation and missing.fix is not None
    assert any(getattr(a, "unit", "") == "nvidia-gridd" for a in missing.fix.actions)


@pytest.mark.parametrize("name", ["hgx-h100-jammy", "proxmox-q35-h100pcie-vm", "gcp-g2-2xl4-vm", "k8s-pod-h100"])
def test_no_vgpu_no_licence_to_judge(name: str) -> None:
    found = next(f for f in audit(ARCHETYPES[name]).findings if f.check == "driver.vgpu_license")
    assert found.status == "not_applicable", found.observed


@pytest.mark.parametrize("spec", [H100, L40S], ids=["h100-80c", "l40s-48c"])
def test_the_gate_does_not_judge_a_vgpus_link_against_the_fleet(tmp_path: Path, spec: HostSpec) -> None:
    expect = tmp_path / "expect.conf"
    expect.write_text("pcie_width = 16\npcie_gen = 4\n")
    out = tmp_path / "result.json"
    main(["check", "--snapshot", str(snapshot(spec)), "--only", "expect", "--expect", str(expect), "--json", str(out)])
    checks = {c.check: c for c in CheckResult.model_validate_json(out.read_text()).checks}
    for check in ("expect.pcie_width", "expect.pcie_gen"):
        assert checks[check].status == "unknown" and "vGPU" in checks[check].observed, checks[check].observed
