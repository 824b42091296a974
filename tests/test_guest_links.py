"""PCIe generation and link verdicts in VM guests: the port above a passed-through GPU is the hypervisor's emulation.

NVML's max link generation "with this device and system" is the lower of the GPU's and the port above it as the
driver reads that port through the guest's config space: in a q35 guest a QEMU pcie-root-port advertising
16 GT/s (2.5 GT/s x1 on machine types before 4.0), not the physical slot. The GPU's own capability and the speed
its link runs at (its Link Status, passed through) are what the guest can trust; bare metal keeps the slot.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.check import CheckResult
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec
from tests.support.mutate import light_copy, set_nvml

PROXMOX = ARCHETYPES["proxmox-q35-h100pcie-vm"]
DOCKER_IN_PROXMOX = replace(
    PROXMOX,
    name="docker-in-proxmox-vm",
    hostname="3f2a9c1e7b44",
    platform=replace(PROXMOX.platform, container="docker", shm_bytes=None),
)
LEGACY = faults.legacy_machine_type(PROXMOX)
GUESTS = [PROXMOX, DOCKER_IN_PROXMOX, LEGACY, faults.legacy_machine_type(DOCKER_IN_PROXMOX)]


def _gen_check(tmp_path: Path, spec: HostSpec, gen: int) -> tuple[str, str]:
    expect = tmp_path / "expect.conf"
    expect.write_text(f"pcie_gen = {gen}\n")
    out = tmp_path / "result.json"
    main(["check", "--snapshot", str(snapshot(spec)), "--only", "expect", "--expect", str(expect), "--json", str(out)])
    found = next(c for c in CheckResult.model_validate_json(out.read_text()).checks if c.check == "expect.pcie_gen")
    return found.status, found.observed


def _finding(spec: HostSpec, check: str) -> Finding:
    result = anyio.run(lambda: run_audit(SnapshotHost(snapshot(spec))))
    return next(f for f in result.findings if f.check == check)


@pytest.mark.parametrize("spec", GUESTS, ids=[s.name for s in GUESTS])
def test_the_emulated_port_does_not_fail_a_guest_whose_links_run_at_the_generation(tmp_path: Path, spec: HostSpec) -> None:
    status, summary = _gen_check(tmp_path, spec, 5)
    assert status == "ok", summary


@pytest.mark.parametrize("spec", GUESTS, ids=[s.name for s in GUESTS])
def test_a_guest_link_is_judged_by_the_gpu_not_by_the_emulated_port(spec: HostSpec) -> None:
    finding = _finding(spec, "pcie.link")
    assert finding.status == "ok", finding.observed


@pytest.mark.parametrize("spec", [PROXMOX, DOCKER_IN_PROXMOX], ids=["vm", "container-in-vm"])
def test_a_guest_gpu_below_the_generation_still_fails(tmp_path: Path, spec: HostSpec) -> None:
    """The GPU's own maximum is true anywhere: an H100 PCIe cannot reach Gen6."""
    status, summary = _gen_check(tmp_path, spec, 6)
    assert status == "problem" and "the GPU's own maximum" in summary, summary


def test_an_idle_guest_link_below_the_generation_is_unknown_saying_what_would_tell(tmp_path: Path) -> None:
    idle = faults.no_server(faults.link_degraded(PROXMOX, gpu=0, gen=1, width=16))
    status, summary = _gen_check(tmp_path, idle, 5)
    assert status == "unknown", summary
    assert "emulat" in summary and "under load" in summary and "lspci" in summary


@pytest.mark.parametrize("name", ["gcp-g2-2xl4-vm", "docker-in-gcp-vm"])
def test_a_cloud_guest_of_gen4_cards_fails_a_gen5_fleet(tmp_path: Path, name: str) -> None:
    status, summary = _gen_check(tmp_path, ARCHETYPES[name], 5)
    assert status == "problem" and "the GPU's own maximum" in summary, summary


@pytest.mark.parametrize(("name", "want"), [("hgx-h100-jammy", "ok"), ("geforce-4x4090", "problem")])
def test_bare_metal_keeps_the_slot(tmp_path: Path, name: str, want: str) -> None:
    status, summary = _gen_check(tmp_path, ARCHETYPES[name], 5)
    assert status == want, summary


@pytest.mark.parametrize("spec", [PROXMOX, LEGACY], ids=["q35-8.1", "q35-3.1"])
def test_maxpayload_of_a_passed_through_gpu_is_not_judged_in_the_guest(spec: HostSpec) -> None:
    finding = _finding(spec, "pcie.mps")
    assert finding.status == "not_applicable" and "vfio" in finding.observed, finding.observed


ROOT_BUS = faults.on_root_bus(PROXMOX)


def _width_check(tmp_path: Path, root: Path, width: int = 16) -> tuple[str, str]:
    expect = tmp_path / "expect.conf"
    expect.write_text(f"pcie_width = {width}\n")
    out = tmp_path / "result.json"
    main(["check", "--snapshot", str(root), "--only", "expect", "--expect", str(expect), "--json", str(out)])
    found = next(c for c in CheckResult.model_validate_json(out.read_text()).checks if c.check == "expect.pcie_width")
    return found.status, found.observed


@pytest.mark.parametrize(
    "spec", [ROOT_BUS, faults.on_root_bus(DOCKER_IN_PROXMOX)], ids=["q35-root-bus", "docker-in-q35-root-bus"]
)
def test_without_nvml_a_guest_gpu_on_the_root_bus_is_no_x0_link(tmp_path: Path, spec: HostSpec) -> None:
    """vfio shows a GPU on a q35 guest's root bus as an integrated endpoint whose Link Status is zero: the width is not
    readable there, not x0 (before: 'GPU x0 (expected x16+)', a problem)."""
    root = light_copy(snapshot(spec), tmp_path / "copy")
    set_nvml(root, "nvmlInit", (), error="LIBRARY_NOT_FOUND")
    status, summary = _width_check(tmp_path, root)
    assert status == "unknown" and "root bus" in summary and "x0" not in summary, summary


def test_with_nvml_the_root_bus_guest_reads_the_real_width(tmp_path: Path) -> None:
    assert _width_check(tmp_path, snapshot(ROOT_BUS)) == ("ok", "2 GPU(s) at x16 or more")


@pytest.mark.parametrize("name", ["geforce-4x4090", "intel-snc-h100pcie"])
def test_bare_metal_without_nvml_still_judges_the_sysfs_width(tmp_path: Path, name: str) -> None:
    root = light_copy(snapshot(faults.link_degraded(ARCHETYPES[name], gpu=1, gen=4, width=8)), tmp_path / "copy")
    set_nvml(root, "nvmlInit", (), error="LIBRARY_NOT_FOUND")
    status, summary = _width_check(tmp_path, root)
    assert status == "problem" and "x8" in summary, summary
