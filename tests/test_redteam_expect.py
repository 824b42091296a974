"""The gate's ``--expect`` checks judged as an expert would, on the generated host kinds (HGX, VM guest, Kubernetes
pod, MIG), and its file parsed as strictly as a fleet's configuration deserves.

- ``expect.gpus`` in a container: NVML shows the GPUs the container was given, not the node's; the node's PCI bus
  (sysfs is not namespaced) shows the rest. A pod given 4 of 8 GPUs is not "a GPU fell off the bus".
- ``expect.pcie_gen`` without NVML: a GPU's own ``max_link_speed`` is what the GPU supports, not what its slot
  does; the link reaches the lower of the two ends. In a VM guest the slot above is emulated: unknown.
- numbers are ASCII digits: ``1_0`` and Arabic-Indic digits are not 10 and 3 GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.gate.expect import parse_expectations
from rigaudit.orchestrator.gate.run import GateOptions, plan_gate, run_gate
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci.sysfs import read_chain
from rigaudit.tools.schema.check import GateCheck
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.support.mutate import light_copy, set_file, set_nvml


def judged(root: Path, expect: str) -> dict[str, GateCheck]:
    """The expect checks of ``rigaudit check --only expect`` on the snapshot ``root``."""
    plan = plan_gate("expect", None, parse_expectations(expect))

    async def run() -> dict[str, GateCheck]:
        host = SnapshotHost(root)
        try:
            result = await run_gate(host, plan, GateOptions(deadline_s=60))
        finally:
            await host.aclose()
        return {c.check: c for c in result.checks}

    return anyio.run(run)


def hide_the_bus(root: Path) -> None:
    """The PCI bus as a container with its own, empty /sys/bus/pci/devices sees it."""
    links = json.loads((root / "links.json").read_text())
    kept = {k: v for k, v in links.items() if not k.startswith("/sys/bus/pci/devices/")}
    (root / "links.json").write_text(json.dumps(kept))


def without_nvml(root: Path) -> None:
    set_nvml(root, "nvmlInit", [], error="LIBRARY_NOT_FOUND")


def test_a_pod_given_half_the_node_is_not_missing_gpus() -> None:
    checks = judged(snapshot(ARCHETYPES["k8s-pod-h100"]), "gpus = 8")
    gpus = checks["expect.gpus"]
    assert gpus.status == "ok", gpus
    assert "4 given to this container" in gpus.observed and "4 more" in gpus.observed


def test_a_pod_that_cannot_list_the_bus_cannot_count_the_node(tmp_path: Path) -> None:
    root = light_copy(snapshot(ARCHETYPES["k8s-pod-h100"]), tmp_path / "pod")
    hide_the_bus(root)
    gpus = judged(root, "gpus = 8")["expect.gpus"]
    assert gpus.status == "unknown" and gpus.counts, gpus  # asked for: could not check, never a drain
    assert "given to this container" in gpus.observed and "on the host" in gpus.observed


def test_a_pod_seeing_the_whole_bus_still_finds_a_missing_gpu(tmp_path: Path) -> None:
    gpus = judged(snapshot(ARCHETYPES["k8s-pod-h100"]), "gpus = 9")["expect.gpus"]
    assert gpus.status == "problem" and gpus.severity == "critical", gpus


@pytest.mark.parametrize("name", ["hgx-h100-jammy", "dgx-a100-mig"])
def test_bare_metal_counts_are_nvml_s(name: str) -> None:
    """MIG instances are not GPUs: NVML's device count is the physical GPUs, as the expectation means."""
    assert judged(snapshot(ARCHETYPES[name]), "gpus = 8")["expect.gpus"].status == "ok"


def _gpu_and_slot(root: Path) -> tuple[str, str, str]:
    """The first GPU's address, the sysfs folder of its slot (the port above it) and that port's address."""

    async def find() -> tuple[str, str, str]:
        host = SnapshotHost(root)
        try:
            probe = Probe(host)
            from rigaudit.agents.facts.gpus import collect_gpus

            gpu = (await collect_gpus(probe)).gpus[0].bdf
            chain = await read_chain(probe, gpu)
        finally:
            await host.aclose()
        assert chain.link_target is not None and chain.bridges
        folder = "/sys/bus/pci/" + chain.link_target.replace("../", "")
        parent_folder = folder.rsplit("/", 1)[0].replace("/sys/bus/pci/devices/", "/sys/devices/", 1)
        return gpu, parent_folder, chain.bridges[-1]

    return anyio.run(find)


def test_without_nvml_the_slot_limits_the_generation(tmp_path: Path) -> None:
    """A Gen5 H100 in a slot that reaches Gen4: its own max_link_speed says 32 GT/s, the port above says 16."""
    root = light_copy(snapshot(ARCHETYPES["hgx-h100-jammy"]), tmp_path / "hgx")
    without_nvml(root)
    assert judged(root, "pcie_gen = 5")["expect.pcie_gen"].status == "ok"
    gpu, slot, _ = _gpu_and_slot(root)
    set_file(root, f"{slot}/max_link_speed", "16.0 GT/s PCIe\n")
    found = judged(root, "pcie_gen = 5")["expect.pcie_gen"]
    assert found.status == "problem" and gpu in found.observed and "Gen4" in found.observed, found


def test_without_nvml_a_vm_guest_cannot_see_its_slot(tmp_path: Path) -> None:
    root = light_copy(snapshot(ARCHETYPES["aws-p5-vm"]), tmp_path / "vm")
    without_nvml(root)
    found = judged(root, "pcie_gen = 5")["expect.pcie_gen"]
    assert found.status == "unknown", found
    assert "VM guest" in found.observed and "NVML" in found.observed


def test_a_width_the_kernel_writes_oddly_is_unknown_not_a_crash(tmp_path: Path) -> None:
    root = light_copy(snapshot(ARCHETYPES["hgx-h100-jammy"]), tmp_path / "hgx")
    without_nvml(root)
    gpu, slot, _ = _gpu_and_slot(root)
    set_file(root, f"{slot}/{gpu}/current_link_width", "\u00b2\n")  # '²'.isdigit() is true; int('²') fails
    found = judged(root, "pcie_width = 16")["expect.pcie_width"]
    assert found.status == "unknown" and gpu in found.observed, found


@pytest.mark.parametrize("text", ["gpus = 1_0", "gpus = \u0663", "gpus = \uff18", "pcie_width = x\u00b9\u2076", "gpus = +8"])
def test_numbers_are_ascii_digits(text: str) -> None:
    with pytest.raises(UsageError, match="whole number"):
        parse_expectations(text)


def test_an_expect_file_swapped_for_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    from rigaudit.orchestrator.gate.expect import load_expectations

    fifo = tmp_path / "expect.conf"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="FIFO"):
        load_expectations(fifo)
