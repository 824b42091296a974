"""One GPU memory event, one severity: gpu.xid and gpu.ecc_errors grade it alike; a reset or an RMA names the GPU
the way the layer that carries it out knows it (the container's host: its UUID; the hypervisor: serial and UUID)."""

from __future__ import annotations

import pytest

from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check

HGX = ARCHETYPES["hgx-h100-jammy"]
POD = ARCHETYPES["k8s-pod-h100"]
VM = KINDS["gcp-a3-highgpu-8g"]


def _pair(spec: HostSpec) -> tuple[Finding, Finding]:
    found = by_check(spec)
    return found["gpu.xid"], found["gpu.ecc_errors"]


@pytest.mark.parametrize(
    ("fault", "severity"),
    [(faults.correctable_remap_pending, "low"), (faults.contained_error_pending, "medium"), (faults.remap_failed, "critical")],
    ids=["correctable", "contained", "failed"],
)
def test_the_checks_that_read_one_memory_event_agree(fault: object, severity: str) -> None:
    """Before: a correctable remap pending was informational in gpu.xid and high in gpu.ecc_errors."""
    xid, ecc = _pair(fault(HGX))  # type: ignore[operator]
    assert (xid.status, ecc.status) == ("problem", "problem"), (xid.observed, ecc.observed)
    assert xid.severity == ecc.severity == severity, (xid.severity, ecc.severity)


def test_a_pending_remap_is_reset_at_the_service_window_not_now() -> None:
    _, ecc = _pair(faults.contained_error_pending(HGX))
    assert ecc.fix is not None and "next service window" in ecc.fix.summary


def test_a_reset_from_a_container_names_the_gpu_by_uuid_on_its_host() -> None:
    """Before: 'nvidia-smi -r -i N' on the container's host, N being the container's index (the host's GPU4 is the
    pod's GPU0; the pod reads no kernel log, so gpu.ecc_errors is the check that sees it)."""
    for spec in (faults.contained_error_pending(POD), faults.correctable_remap_pending(POD)):
        for found in _pair(spec)[1:]:
            assert found.fix is not None and found.fix.where == "container_host", found.check
            resets = [a for a in found.fix.actions if isinstance(a, CommandAction) and a.argv[:2] == ("nvidia-smi", "-r")]
            assert resets, found.fix.actions
            assert all(a.argv[-1].startswith("GPU-") for a in resets), [a.argv for a in resets]


def test_an_rma_from_a_vm_names_the_gpu_by_serial_and_uuid() -> None:
    """Before: 'RMA the GPUs whose row remapping failed: GPU0 (0000:..)', the guest's index and address."""
    _, ecc = _pair(faults.remap_failed(VM))
    assert ecc.fix is not None and ecc.fix.where == "hypervisor"
    assert "serial " in ecc.fix.summary and "UUID GPU-" in ecc.fix.summary
    assert not any(isinstance(a, CommandAction) and "-i" in a.argv for a in ecc.fix.actions)


B200 = KINDS["hgx-b200-noble"]
AZURE = KINDS["azure-nd-h100-v5"]


def _resets(found: Finding) -> list[CommandAction]:
    assert found.fix is not None
    return [a for a in found.fix.actions if isinstance(a, CommandAction) and a.argv[:2] == ("nvidia-smi", "-r")]


def _same_fix(xid: Finding, ecc: Finding) -> None:
    assert xid.fix is not None and ecc.fix is not None
    assert ecc.fix.summary in xid.fix.summary, (xid.fix.summary, ecc.fix.summary)
    assert (xid.fix.where, xid.fix.actions) == (ecc.fix.where, ecc.fix.actions)


def test_a_remap_failure_is_drained_and_replaced_not_reset() -> None:
    """Before: gpu.xid said 'Xid 64: stop every process on the GPU and reset it (nvidia-smi -r), or reboot' while
    gpu.ecc_errors on the same event said RMA: a reset gives a bank without spare rows none back."""
    xid, ecc = _pair(faults.remap_failed(B200))
    _same_fix(xid, ecc)
    assert xid.fix is not None and xid.fix.summary.startswith("Xid 64: Drain")
    assert "RMA" in xid.fix.summary and "serial 1654922000000" in xid.fix.summary
    assert not _resets(xid)


def test_a_contained_error_restarts_the_application_now_and_resets_at_the_window() -> None:
    """Before: gpu.xid followed Xid 63 ('stop every process on the GPU and reset it') rather than Xid 94, the most
    severe Xid of the event, whose resolution is to restart the application that hit it."""
    xid, ecc = _pair(faults.contained_error_pending(HGX))
    _same_fix(xid, ecc)
    assert xid.fix is not None and xid.fix.summary.startswith("Xid 94, 63: Restart the application")
    assert "now" in xid.fix.summary and "next service window" in xid.fix.summary
    assert [a.argv[-1] for a in _resets(xid)] == ["0"]


def test_a_contained_error_in_a_vm_guest_is_reset_by_restarting_the_vm() -> None:
    """Before: 'nvidia-smi -r' inside an Azure guest, where the hypervisor resets a passed-through GPU with the VM."""
    xid, ecc = _pair(faults.contained_error_pending(AZURE))
    _same_fix(xid, ecc)
    assert xid.fix is not None and "restart this VM at the next service window" in xid.fix.summary
    assert not _resets(xid) and not _resets(ecc)
