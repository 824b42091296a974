"""GPU errors judged by what happened after them: an Xid the GPU was reset from, an application fault whose process
has exited, one NVLink far above its siblings, a corrected-error storm on a GPU's PCIe link (review 7: F2, F7-F9)."""

from __future__ import annotations

import pytest

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
