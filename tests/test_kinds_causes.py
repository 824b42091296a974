"""Causes before fixes: a daemon that failed, or a module that did not load, is fixed by what removes the reason it
gave (its log, its journal, the kernel log), never by starting or loading it again as it is; with no readable reason
the cause is unknown and the finding names the command that would tell."""

from __future__ import annotations

import pytest

from rigaudit.tools.schema.finding import CommandAction, Finding, ModuleLoadAction, ServiceStartAction
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check

HGX = ARCHETYPES["hgx-h100-jammy"]
B200 = KINDS["hgx-b200-noble"]


def _words(found: Finding) -> str:
    assert found.fix is not None, found.observed
    steps = " ".join(getattr(a, "description", "") + " " + " ".join(getattr(a, "argv", ())) for a in found.fix.actions)
    return f"{found.fix.summary} {steps}"


def _starts(found: Finding) -> bool:
    assert found.fix is not None
    return any(isinstance(a, ServiceStartAction) for a in found.fix.actions)


@pytest.mark.parametrize(
    ("spec", "cause", "words"),
    [
        (faults.fabricmanager_version_refused(HGX), "version is not the loaded driver's", "exactly the loaded driver's"),
        (faults.nvlsm_without_ib_umad(B200), "ib_umad module is not loaded", "ib_umad"),
        (faults.nvlsm_not_running(B200), "NVLSM", "install NVLSM"),
        (faults.fabricmanager_masked(HGX), "masked", "unmask"),
    ],
    ids=["version", "ib_umad", "nvlsm", "masked"],
)
def test_a_fabric_manager_that_says_why_is_fixed_by_its_reason(spec: HostSpec, cause: str, words: str) -> None:
    """Before: 'Start nvidia-fabricmanager' whatever its log said."""
    found = by_check(spec)["driver.fabricmanager"]
    assert (found.status, found.severity) == ("problem", "critical"), found.observed
    assert cause in found.observed
    assert words in _words(found)
    assert found.fix is not None
    waits = [e.check for e in found.fix.edges if e.kind == "requires"]
    assert not _starts(found) or waits == ["driver.fabricmanager_version"]  # a start only after the cause's fix


def test_ib_umad_is_loaded_not_the_fabric_manager_started() -> None:
    found = by_check(faults.nvlsm_without_ib_umad(B200))["driver.fabricmanager"]
    assert found.fix is not None and ModuleLoadAction(module="ib_umad") in found.fix.actions
    assert "is ib_umad module loaded?" in found.observed


def test_an_nvlsm_that_stopped_with_its_own_reason_is_fixed_by_that_reason() -> None:
    """Before: 'install NVLSM (the nvlsm package ...)' from the fabric manager's NV_WARN_NOTHING_TO_DO, though NVLSM is
    installed and its own log says it found no local port of the GUID it was given."""
    found = by_check(faults.nvlsm_guid_not_found(B200))["driver.fabricmanager"]
    assert (found.status, found.severity) == ("problem", "critical"), found.observed
    assert "ERR 5422: Unable to find requested CA guid 0x" in found.observed
    assert "file:/var/log/nvlsm.log" in found.evidence
    assert "install NVLSM" not in _words(found) and "GUID" in _words(found)
    assert not _starts(found)


def test_an_nvlsm_whose_reason_is_unreadable_leaves_the_cause_unknown() -> None:
    """Before: 'install NVLSM' on a host where it is installed and its log could not be read."""
    found = by_check(faults.nvlsm_log_unreadable(B200))["driver.fabricmanager"]
    assert (found.status, found.severity) == ("problem", "critical"), found.observed
    assert "cause unknown" in found.observed and "NVLSM" in found.observed, found.observed
    assert "install NVLSM" not in _words(found)
    first = found.fix.actions[0] if found.fix else None
    assert isinstance(first, CommandAction) and "/var/log/nvlsm.log" in first.description


def test_nothing_to_do_off_nvlink5_is_not_called_nvlsm() -> None:
    """On Hopper the same NV_WARN_NOTHING_TO_DO says the NVSwitch driver saw no switch; NVLSM is NVLink 5's."""
    found = by_check(faults.nvlsm_not_running(HGX))["driver.fabricmanager"]
    assert "NVLSM" not in found.observed and "no NVSwitch to manage" in found.observed
    assert not _starts(found)
    assert found.fix is not None and found.fix.kind == "hardware" and "/dev/nvidia-nvswitch" in found.fix.summary


def test_a_fabric_manager_without_a_known_reason_says_what_would_tell() -> None:
    found = by_check(faults.fabricmanager_unexplained(HGX))["driver.fabricmanager"]
    assert "cause unknown" in found.observed
    assert found.fix is not None
    first = found.fix.actions[0]
    assert isinstance(first, CommandAction) and "journalctl -u nvidia-fabricmanager -n 50 --no-pager" in first.description


def test_persistenced_that_cannot_open_the_devices_is_not_just_started() -> None:
    found = by_check(faults.persistenced_no_devices(HGX))["driver.persistence"]
    assert found.status == "problem"
    assert "/dev/nvidia*" in _words(found) and not _starts(found)
    assert "cannot open the GPUs' device files" in found.explanation


def test_peermem_refused_by_the_kernel_is_not_modprobed() -> None:
    """Before: 'Load nvidia_peermem' (ModuleLoadAction), which fails with the same Unknown symbol."""
    found = by_check(faults.peermem_unknown_symbol(HGX))["driver.peermem"]
    assert found.status == "problem" and found.fix is not None
    assert not any(isinstance(a, ModuleLoadAction) for a in found.fix.actions)
    assert "peer-memory API" in found.fix.summary and "OFED" in _words(found)


def test_uvm_refused_by_the_kernel_is_sent_to_its_reason() -> None:
    found = by_check(faults.uvm_symbol_mismatch(HGX))["driver.uvm"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "Unknown symbol nvUvmInterfaceRegisterGpu" in found.observed
    assert found.fix is not None and not any(isinstance(a, ModuleLoadAction) for a in found.fix.actions)
    assert "Rebuild every NVIDIA module" in found.fix.summary


def test_nvidia_ko_refused_is_told_by_the_kernel_log() -> None:
    """Before: driver.version unknown (no module, no NVML) and driver.uvm unknown without the reason."""
    found = by_check(faults.gpu_unsupported_by_driver(HGX))
    version = found["driver.version"]
    assert (version.status, version.severity) == ("problem", "critical"), version.observed
    assert "not supported by the" in version.observed and version.fix is not None
    assert "Appendix A" in version.fix.summary
    uvm = found["driver.uvm"]
    assert uvm.status == "unknown" and "not supported by the" in uvm.observed


def test_a_version_refusal_is_graded_alike_by_both_checks_that_read_it() -> None:
    """Before: critical in driver.fabricmanager, high in driver.fabricmanager_version, for one refusal."""
    found = by_check(faults.fabricmanager_version_refused(HGX))
    fm, version = found["driver.fabricmanager"], found["driver.fabricmanager_version"]
    assert fm.severity == version.severity == "critical", (fm.severity, version.severity)


def test_a_container_without_uvm_on_its_host_is_sent_to_the_host_not_to_its_options() -> None:
    """Seen from a container whose host refused nvidia_uvm: /dev/nvidia-uvm is missing because the host's kernel
    registered no such device (/proc/devices), so recreating the container with --gpus all changes nothing."""
    devices = by_check(faults.uvm_symbol_mismatch(KINDS["docker-h100-forward-compat"]))["container.gpu_devices"]
    assert devices.status == "problem" and devices.fix is not None
    assert devices.fix.where == "container_host" and "--gpus all" not in devices.fix.summary
    assert "/proc/devices lists no nvidia-uvm" in devices.observed
