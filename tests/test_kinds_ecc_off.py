"""ECC turned off on a data-center GPU (the sixth review's H1): no error count was read, so none is reported as 0.

With ECC mode off NVML counts no memory error (``nvmlDeviceGetTotalEccErrors``: "Requires ECC Mode to be enabled"),
and an HBM GPU detects none: ``gpu.ecc_errors`` cannot say "0 uncorrectable errors", and ``cuda.ecc_mode`` says
the mode itself is the problem. A workstation board that ships with ECC off stays ok.
"""

from __future__ import annotations

from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.agents.investigators.gpu import INVESTIGATOR as GPU
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot


def test_ecc_off_on_an_hgx_is_not_zero_errors_and_is_itself_the_problem() -> None:
    root = snapshot(faults.ecc_off(ARCHETYPES["hgx-h100-jammy"]))
    errors = audit_snapshot(GPU, root)["gpu.ecc_errors"]
    assert errors.status == "unknown", errors.observed
    assert "0 volatile" not in errors.observed and "ECC mode on" in errors.observed
    mode = audit_snapshot(CUDA, root, problem_has_fix=True)["cuda.ecc_mode"]
    assert (mode.status, mode.severity) == ("problem", "medium"), mode.observed
    assert mode.fix is not None and any("-e" in (getattr(a, "argv", None) or ()) for a in mode.fix.actions)


def test_a_workstation_board_with_ecc_off_as_shipped_stays_ok() -> None:
    mode = audit_snapshot(CUDA, snapshot(faults.ecc_off(ARCHETYPES["ws-rtx6000ada"])))["cuda.ecc_mode"]
    assert mode.status == "ok", mode.observed
