"""The reason table: a known message gives its cause, a taint notice is no reason, nothing readable is unknown."""

from __future__ import annotations

from rigaudit.agents.facts.unit_reasons import FABRICMANAGER, UnitLog, module_cause, unit_cause
from rigaudit.tools.hosts.base import CommandResult

JOURNAL = ("journalctl", "-u", "nvidia-fabricmanager", "-n", "50", "--no-pager")
STATUS = ("systemctl", "status", "nvidia-fabricmanager", "--no-pager")


def _log(journal: str | None, log: str | None = None) -> UnitLog:
    result = CommandResult(JOURNAL, stdout=journal) if journal is not None else CommandResult(JOURNAL, error="not_recorded")
    return UnitLog(
        unit="nvidia-fabricmanager",
        status=CommandResult(STATUS, error="not_recorded"),
        journal=result,
        log_path="/var/log/fabricmanager.log",
        log=log,
        log_error=None if log is not None else "ENOENT",
    )


def test_a_module_verification_taint_is_not_why_a_module_did_not_load() -> None:
    """The kernel prints it and loads the module anyway."""
    log = "[ 5.1] nvidia: module verification failed: signature and/or required key missing - tainting kernel\n"
    assert not module_cause("nvidia_uvm", log).known


def test_the_newer_line_names_the_cause() -> None:
    log = (
        "[ 5.1] nvidia_uvm: Unknown symbol nvUvmInterfaceRegisterGpu (err -22)\n"
        "[ 9.1] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"
    )
    assert module_cause("nvidia_uvm", log).key == "symbols"
    assert module_cause("nvidia", log).key == "signature"


def test_peermem_without_the_peer_memory_api_is_its_own_cause() -> None:
    log = "[ 5.0] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)\n"
    assert module_cause("nvidia_peermem", log).key == "peer_memory_api"
    assert not module_cause("nvidia_uvm", log).known


def test_the_fabric_managers_own_log_is_read() -> None:
    line = "fabric manager NVIDIA GPU driver interface version 550.1 doesn't match with driver version 550.2. Please"
    cause = unit_cause(_log(None, f"[Nov 30] [ERROR] [tid 1] {line}\n"), FABRICMANAGER)
    assert cause.key == "fm_version" and cause.told_by == "file:/var/log/fabricmanager.log"


def test_nothing_readable_is_an_unknown_cause_with_the_command_that_tells() -> None:
    cause = unit_cause(_log(None), FABRICMANAGER)
    assert not cause.known and "not readable" in cause.cause
    assert "journalctl -u nvidia-fabricmanager -n 50 --no-pager" in cause.fix
