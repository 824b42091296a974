"""Cloud guests and a pod on one: GCP a3-highgpu-8g, a GKE pod on it, and an Azure ND H100 v5 Hyper-V guest.
Healthy as generated (nothing at medium or above); each injected fault found, at the layer that can fix it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rigaudit.tools.model.finding import Finding
from tests.hostgen import faults
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check, serious

CLOUDS = ["gcp-a3-highgpu-8g", "gke-a3-pod", "azure-nd-h100-v5"]


@pytest.mark.parametrize("name", CLOUDS)
def test_a_healthy_cloud_kind_has_no_serious_problem(name: str) -> None:
    assert serious(KINDS[name]) == {}


def test_azure_is_told_a_hyper_v_guest() -> None:
    found = by_check(KINDS["azure-nd-h100-v5"])
    assert found["pcie.acs"].status == "not_applicable", found["pcie.acs"].observed
    assert found["firmware.cppc"].status == "not_applicable"


FAULTS: list[tuple[str, Callable[[HostSpec], HostSpec], str, str]] = [
    ("gcp-a3-highgpu-8g", faults.fabricmanager_down, "driver.fabricmanager", "critical@host"),
    ("gke-a3-pod", lambda s: faults.shm(s, 64 * 2**20), "container.shm", "high@container_config"),
    ("azure-nd-h100-v5", faults.fabricmanager_down, "driver.fabricmanager", "critical@host"),
]


@pytest.mark.parametrize(("name", "fault", "check", "verdict"), FAULTS, ids=[f"{n}-{c}" for n, _, c, _ in FAULTS])
def test_an_injected_fault_is_found_where_it_is_fixed(
    name: str, fault: Callable[[HostSpec], HostSpec], check: str, verdict: str
) -> None:
    found = serious(fault(KINDS[name]))
    assert found.get(check) == verdict, found
    assert set(found) - {check} <= {"p2p.status"}, found  # the fabric's consequence, as on the HGX archetype


def _fix_words(finding: Finding) -> str:
    assert finding.fix is not None, finding.observed
    return " ".join([finding.fix.summary, *(getattr(a, "description", "") for a in finding.fix.actions)])


def test_an_xid_79_in_an_azure_guest_is_worded_for_azure() -> None:
    """Before: 'Xid 79: reboot the machine', 'stop and start this VM from the hypervisor ... (this VM sees it as GPU0
    (0000:50:00.0))': an action an Azure customer does not have, and the GPU in the guest's terms."""
    spec = faults.xid(KINDS["azure-nd-h100-v5"], 0, 79)
    xid = by_check(spec)["gpu.xid"]
    assert (xid.severity, xid.fix.where if xid.fix else None) == ("critical", "hypervisor")
    words = _fix_words(xid)
    assert "Restart the VM once" in words and "deallocate" in words and "Guest Health Reporting" in words, words
    assert "serial 1654922000000" in words and "UUID GPU-" in words, words
    assert "0000:50:00" not in words and "reboot the machine" not in words.partition("(On the physical host")[0]


def test_an_nvlink_down_in_a_gcp_guest_names_the_gpu_for_gcp_support() -> None:
    """Before: 'report it to gcp support' (the provider as a DMI token), with the GPU's serial and UUID."""
    links = by_check(faults.nvlink_down(KINDS["gcp-a3-highgpu-8g"]))["nvlink.links"]
    words = _fix_words(links)
    assert "GCP support" in words and "gcloud compute instances stop" in words, words
    assert "serial 1654922000003" in words and "UUID GPU-" in words, words
    assert "0000:80:00" not in words


def test_p2p_refused_for_want_of_the_fabric_in_a_vm_guest_is_the_fabric_managers() -> None:
    """Before: high 'Let peer-to-peer through: the pair is joined by NVLink yet P2P is refused' on Azure's flat guest
    bus, while NVML reports the fabric of all 8 GPUs not completed and driver.fabricmanager is critical."""
    found = by_check(faults.fabricmanager_down(KINDS["azure-nd-h100-v5"]))
    p2p, fm = found["p2p.status"], found["driver.fabricmanager"]
    assert p2p.fix is not None and fm.fix is not None
    assert (p2p.severity, p2p.fix.where) == (fm.severity, fm.fix.where) == ("critical", "host")
    assert "see driver.fabricmanager" in p2p.fix.summary and "Let peer-to-peer through" not in p2p.fix.summary
    assert "not completed" in p2p.explanation and "x-nv-gpudirect-clique" not in _fix_words(p2p)
