"""GPU errors judged by what happened after them: an Xid the GPU was reset from, an application fault whose process
has exited, one NVLink far above its siblings, a corrected-error storm on a GPU's PCIe link (review 7: F2, F7-F9)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigaudit.agents.investigators.gpu.xid_after import recovery_now
from rigaudit.orchestrator.cli import main
from tests.hostgen import ARCHETYPES, gpu_errors
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check

HGX = ARCHETYPES["hgx-h100-jammy"]


def _gate(spec: HostSpec, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", "--snapshot", str(snapshot(spec)), "-q"])
    return code, capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    "spec",
    [
        gpu_errors.xid95_reset(HGX),
        gpu_errors.xid95_reset(HGX, logged_back=False, nvml_now=0),
        gpu_errors.xid95_reset(HGX, nvml_now=0),
    ],
    ids=["logged-back-to-none", "nvml-none-no-line", "both"],
)
def test_an_xid_the_gpu_was_reset_from_is_low_and_does_not_drain(spec: HostSpec, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: critical, 'Xid 95 ... ×1; Xid 154 ... ×2' with the worst recovery action of any line (reset), and the
    gate exited 1 while gpu.ecc_errors called the same GPU healthy (its remap applied)."""
    found = by_check(spec)
    xid, ecc = found["gpu.xid"], found["gpu.ecc_errors"]
    assert (xid.status, xid.severity) == ("problem", "low"), xid.observed
    assert ecc.status == "ok" and "rows remapped earlier" in ecc.observed
    assert "Xid 95" in xid.observed and "at 71234.5 s" in xid.observed and "dealt with since" in xid.observed
    assert "None now" in xid.observed and "row remap applied (1 uncorrectable" in xid.observed
    assert xid.fix is not None and "watch for a repeat" in xid.fix.summary
    assert not any("nvidia-smi" in a.description and "-r" in a.description for a in xid.fix.actions)  # type: ignore[union-attr]
    assert _gate(spec, capsys)[0] == 0


def test_the_reset_is_read_where_the_driver_logged_it() -> None:
    xid = by_check(gpu_errors.xid95_reset(HGX))["gpu.xid"]
    assert "recovery action back to None at 71890.2 s" in xid.observed


def test_a_memory_xid_that_came_back_after_its_reset_is_high_and_drains(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: medium, so an uncontained memory error returning after every reset passed the gate."""
    spec = gpu_errors.xid95_reset(HGX, episodes=3, nvml_now=0)
    xid = by_check(spec)["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "high"), xid.observed
    assert _gate(spec, capsys)[0] == 1
    xid = by_check(gpu_errors.xid95_reset(HGX, episodes=2, nvml_now=0))["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "high"), xid.observed
    assert "×2, repeated after a reset (at 77234.5 s)" in xid.observed
    assert xid.fix is not None and "DCGM diagnostics" in xid.fix.summary and "after its reset" in xid.fix.summary


def test_a_reset_is_asked_once_per_gpu() -> None:
    """Before: Xid 95 and its Xid 154 on GPU3 gave the same reset step twice."""
    xid = by_check(gpu_errors.xid95_pending(HGX))["gpu.xid"]
    assert xid.fix is not None
    steps = [a.description for a in xid.fix.actions]  # type: ignore[union-attr]
    assert len([d for d in steps if d.startswith("reset GPU3")]) == 1, steps
    assert not any(d.startswith("if it repeats: none") for d in steps), steps


@pytest.mark.parametrize("nvml_now", [None, 1], ids=["log-only", "nvml-reset-required"])
def test_an_xid_with_no_reset_since_stays_critical_and_drains(nvml_now: int | None, capsys: pytest.CaptureFixture[str]) -> None:
    spec = gpu_errors.xid95_pending(HGX, nvml_now=nvml_now)
    found = by_check(spec)
    assert found["gpu.xid"].severity == found["gpu.ecc_errors"].severity == "critical"
    assert _gate(spec, capsys)[0] == 1


def test_nvml_asking_for_a_reset_outweighs_a_log_line_back_to_none() -> None:
    """The action is a state: NVML's value now, not the last line, where NVML answered (a repeat since)."""
    xid = by_check(gpu_errors.xid95_reset(HGX, nvml_now=1))["gpu.xid"]
    assert xid.status == "problem" and xid.severity in ("high", "critical"), (xid.severity, xid.observed)
    assert xid.fix is not None and "reset" in xid.fix.summary


@pytest.mark.parametrize("code", [13, 31])
def test_an_application_fault_of_an_exited_process_is_low(code: int) -> None:
    """Before: medium, 'restart the application that hit it', for pid 91822 that has exited and is no server."""
    xid = by_check(gpu_errors.app_fault(HGX, code=code))["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "low"), xid.observed
    assert "pid 91822 (python) has exited" in xid.observed and "no serving process is that pid" in xid.observed
    assert "unaffected" in xid.explanation


def test_an_application_fault_of_a_live_server_stays_medium_and_names_it() -> None:
    xid = by_check(gpu_errors.app_fault(HGX, code=13, who="server"))["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "medium"), xid.observed
    assert "still runs: it is the serving process pid" in xid.observed
    assert xid.fix is not None and xid.fix.kind == "restart"


def test_a_pid_reused_by_a_process_started_after_the_xid_is_not_the_one_that_hit_it() -> None:
    """Before: 'still runs: it is the serving process', because the pid and the name (python3) matched."""
    xid = by_check(gpu_errors.app_fault(HGX, code=13, who="reused"))["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "low"), xid.observed
    assert "is now another process, started at 64510.8 s, after the Xid" in xid.observed


def test_one_gpu_faulting_the_jobs_of_many_processes_is_the_gpus_and_drains(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: low (each process had exited), though five processes hit Xid 13 on GPU6 and none on another GPU."""
    spec = gpu_errors.app_faults_of_many(HGX)
    xid = by_check(spec)["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "high"), xid.observed
    assert xid.observed.startswith("Xid 13 from 5 different processes on GPU6 (") and "the GPU's pattern" in xid.observed
    assert xid.fix is not None and "dcgmi diag -r 3 -i 6" in xid.fix.summary
    assert _gate(spec, capsys)[0] == 1


@pytest.mark.parametrize("gpus", [(0, 1, 2, 3, 4), (6, 6)], ids=["spread-over-gpus", "two-processes"])
def test_application_faults_spread_over_gpus_or_of_two_processes_stay_low(gpus: tuple[int, ...]) -> None:
    xid = by_check(gpu_errors.app_faults_of_many(HGX, gpus))["gpu.xid"]
    assert (xid.status, xid.severity) == ("problem", "low"), xid.observed


def test_one_nvlink_orders_of_magnitude_above_its_siblings_is_named_first_and_medium() -> None:
    """Before: low, graded by counter type alone, the outlier buried in a 3,480-character list of every link."""
    errors = by_check(gpu_errors.nvlink_outlier(HGX))["nvlink.errors"]
    assert (errors.status, errors.severity) == ("problem", "medium"), errors.observed[:300]
    assert errors.observed.startswith("GPU5 (") and " link 7: DL_REPLAY=481,223" in errors.observed
    assert "an outlier" in errors.observed and "the other 143 active links" in errors.observed
    assert len(errors.observed) < 600
    assert errors.fix is not None and errors.fix.summary.startswith("GPU5 (") and "link 7" in errors.fix.summary


def test_a_crc_only_outlier_is_medium_too() -> None:
    """Before: ok ('CRC counts only'): retry corrects CRC errors, but one link at 10^5 times the others' is its own."""
    errors = by_check(gpu_errors.nvlink_outlier(HGX, replay=0, crc_flit=5_000_000, crc_data=0))["nvlink.errors"]
    assert (errors.status, errors.severity) == ("problem", "medium"), errors.observed[:300]


def test_uniform_small_replays_stay_low() -> None:
    errors = by_check(gpu_errors.nvlink_uniform_replays(HGX))["nvlink.errors"]
    assert (errors.status, errors.severity) == ("problem", "low"), errors.observed[:300]
    assert "outlier" not in errors.observed


SNC = ARCHETYPES["intel-snc-h100pcie"]


@pytest.mark.parametrize(
    "spec",
    [
        gpu_errors.aer_storm(SNC),
        gpu_errors.aer_storm(replace(SNC, os=replace(SNC.os, kernel="6.16.0-061600-generic"))),
        gpu_errors.aer_storm(HGX),
    ],
    ids=["6.8-no-rate-limit", "6.16-rate-limited", "5.15-hgx-switch-port"],
)
def test_a_corrected_error_storm_on_a_gpus_link_is_medium_and_named_first(spec: HostSpec) -> None:
    """Before: low, like a handful since boot, although the kernel log showed the burst (the rate the explanation
    said one sample cannot show)."""
    aer = by_check(spec)["pcie.aer"]
    assert (aer.status, aer.severity) == ("problem", "medium"), aer.observed[:300]
    assert aer.observed.startswith("GPU2 (") and "'s link, at its port" in aer.observed
    assert "AER messages in the kernel log" in aer.observed and "Physical Layer RxErr" in aer.observed
    assert "correctable 184213" in aer.observed
    assert aer.fix is not None and aer.fix.summary.startswith("GPU2 (")


def test_the_rate_limits_dropped_count_is_counted() -> None:
    spec = gpu_errors.aer_storm(replace(SNC, os=replace(SNC.os, kernel="6.16.0-061600-generic")), blocks=3)
    aer = by_check(spec)["pcie.aer"]
    assert aer.severity == "medium" and "3,102 dropped by the kernel's rate limit" in aer.observed


def test_a_handful_of_corrected_errors_since_boot_stays_low() -> None:
    aer = by_check(gpu_errors.aer_few(SNC))["pcie.aer"]
    assert (aer.status, aer.severity) == ("problem", "low"), aer.observed
    assert "no burst" in aer.explanation


def test_without_the_kernel_log_it_says_what_would_tell() -> None:
    aer = by_check(gpu_errors.kernel_log_denied(gpu_errors.aer_storm(SNC)))["pcie.aer"]
    assert (aer.status, aer.severity) == ("problem", "low"), aer.observed
    assert "the kernel log would tell" in aer.explanation and "not permitted" in aer.explanation


H100_ANSWER = [
    {
        "fieldId": 230,
        "scopeId": 0,
        "timestamp": 1796594284736742,
        "latencyUsec": 13,
        "valueType": 1,
        "nvmlReturn": 0,
        "value": {"dVal": 0.0, "uiVal": 0, "ulVal": 0, "ullVal": 0, "sllVal": 0, "siVal": 0, "usVal": 0},
    }
]
"""nvmlDeviceGetFieldValues(0, [(230, 0)]) through pynvml on a lent H100 (driver 580.159.04, nvidia-smi -q: GPU Recovery
Action: None), as the NVML facade records it."""


def test_the_recovery_action_field_reads_as_an_h100_answers_it() -> None:
    assert recovery_now(H100_ANSWER) == 0
    assert recovery_now([{**H100_ANSWER[0], "value": {**H100_ANSWER[0]["value"], "uiVal": 1}}]) == 1  # type: ignore[dict-item]
    assert recovery_now([{**H100_ANSWER[0], "nvmlReturn": 3}]) is None  # NOT_SUPPORTED on an older driver
    assert recovery_now(gpu_errors.recovery_field(2)) == 2
