"""Cloud guests and a pod on one: GCP a3-highgpu-8g, a GKE pod on it, and an Azure ND H100 v5 Hyper-V guest.
Healthy as generated (nothing at medium or above); each injected fault found, at the layer that can fix it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.build import build
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


def test_the_azure_guest_shows_hyper_v_vpci_domains_and_infiniband_vfs() -> None:
    """Before: the guest's GPUs and NICs sat on domain 0000 behind a virtio NIC, the NICs physical functions. Hyper-V's
    vPCI gives each device its own domain under its VMBus device (Azure/azhpc-images topology/ndv5-topo.xml)."""
    tree = build(KINDS["azure-nd-h100-v5"]).tree
    prefix = "/sys/bus/pci/devices/"
    devices = sorted(p[len(prefix) :] for p in tree.links if p.startswith(prefix))
    gpus = [f"{d:04x}:00:00.0" for d in (1, 2, 3, 8, 9, 10, 11, 12)]
    assert devices[:16] == gpus + [f"{0x101 + k:04x}:00:00.0" for k in range(8)], devices
    assert not any(d.startswith("0000:") for d in devices)
    gpu0 = tree.links[prefix + "0001:00:00.0"]
    assert "/VMBUS:00/56475055-0001-" in gpu0 and gpu0.endswith("/pci0001:00/0001:00:00.0"), gpu0
    vf = "/sys/devices/" + tree.links[prefix + "0101:00:00.0"].partition("devices/")[2]
    assert tree.text(f"{vf}/device") == "0x101e\n" and not any(p.startswith(f"{vf}/physfn") for p in tree.links)
    assert "/sys/class/infiniband/mlx5_ib0" in tree.links and "CA type: MT4126" in tree.commands[("ibstat",)]["stdout"]


def test_aer_counters_of_a_guest_without_root_ports_are_not_evidence() -> None:
    """Before: ok 'AER counters zero on 8 device(s) (GPUs and bridges above them)' in a Hyper-V guest, where no root
    port is visible: AER messages go to the hypervisor's root ports and the guest's counters never count."""
    aer = by_check(KINDS["azure-nd-h100-v5"])["pcie.aer"]
    assert aer.status == "ok", aer.observed
    assert "AER counters zero" not in aer.observed and "hypervisor" in aer.observed, aer.observed
    assert "NVML PCIe replays 0 on 8/8 GPUs" in aer.observed, aer.observed
    bad = by_check(faults.link_degraded(KINDS["azure-nd-h100-v5"]))["pcie.aer"]
    assert bad.status == "ok" and "hypervisor" in bad.observed


@pytest.mark.parametrize(
    ("name", "product"),
    [("azure-nd-h100-v5", "Virtual Machine"), ("gcp-a3-highgpu-8g", "Google Compute Engine")],
)
def test_a_cloud_guest_shows_its_providers_product_name(name: str, product: str) -> None:
    """Azure and GCP guests show a fixed product name (the size is in the metadata service); only EC2 writes the
    instance type there (as the aws-p5-vm archetype shows)."""
    tree = build(KINDS[name]).tree
    assert tree.text("/sys/devices/virtual/dmi/id/product_name") == product + "\n"
