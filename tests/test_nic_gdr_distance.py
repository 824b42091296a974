"""numa.nic_affinity by what NCCL decides: GPUDirect RDMA only where NIC and GPU meet below the root complex
(distance at most PXB, NCCL_NET_GDR_LEVEL; src/graph/paths.cc ncclTopoCheckGdr). A NIC on the GPU's NUMA node but
on another root port or root complex is local to the node and not to NCCL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec, NicSpec
from tests.support.audits import audited

NVL = ARCHETYPES["h100nvl-bridged-pairs"]
SNC_RDMA = replace(ARCHETYPES["intel-snc-h100pcie"], name="snc-h100pcie-4nics", nics=NicSpec("cx7", 4))


def nic(spec: HostSpec) -> Finding:
    result = audited(spec)
    return next(f for f in result.findings if f.check == "numa.nic_affinity")


@pytest.mark.parametrize("spec", [NVL, SNC_RDMA], ids=["r760xa-root-ports", "snc-root-ports"])
def test_a_numa_local_nic_on_another_root_port_is_not_local_to_nccl(spec: HostSpec) -> None:
    """Before: ok ('every GPU node has a local RDMA NIC') although NCCL stages those GPUs' traffic through memory."""
    found = nic(spec)
    assert found.status == "problem" and found.severity == "low", found.observed
    assert "share no PCIe switch" in found.observed and "PXB" in found.explanation
    assert found.fix is not None and "NCCL_NET_GDR_LEVEL" in " ".join(a.description for a in found.fix.actions)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["hgx-h100-jammy", "hgx-h200-noble", "dgx-a100-mig", "aws-p5-vm", "gh200-node", "k8s-pod-h100"])
def test_a_nic_under_the_gpus_switch_or_a_path_nccl_takes_is_ok(name: str) -> None:
    """HGX/DGX: NIC and GPU under one PEX switch (PIX); a cloud guest's PCI tree is not the physical one; GH200
    reaches the Grace CPU's NIC over NVLink-C2C."""
    found = nic(ARCHETYPES[name])
    assert found.status in ("ok", "not_applicable"), found.observed


def test_a_grace_gpu_that_nvml_cannot_name_is_not_judged_by_pcie_switches() -> None:
    """Before: low ('GPU 0008:01:00.0 ... share no PCIe switch with one'): with the driver refusing the GB200s, NVML
    names no GPU and the sysfs PCI tree shows each alone in its domain; its path to the NICs is NVLink-C2C, known by
    its PCI device id (review X6)."""
    found = nic(faults.proprietary_on_blackwell(KINDS["gb200-nvl72-tray"]))
    assert found.status == "ok", found.observed
    assert "every GPU node has a local RDMA NIC" in found.observed and "PCIe switch" not in found.observed
