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
    assert errors.status == "not_applicable", errors.observed
    assert "0 volatile" not in errors.observed and "cuda.ecc_mode" in errors.observed
    mode = audit_snapshot(CUDA, root, problem_has_fix=True)["cuda.ecc_mode"]
    assert (mode.status, mode.severity) == ("problem", "medium"), mode.observed
    assert mode.fix is not None and any("-e" in (getattr(a, "argv", None) or ()) for a in mode.fix.actions)


def test_a_workstation_board_with_ecc_off_as_shipped_stays_ok() -> None:
    mode = audit_snapshot(CUDA, snapshot(faults.ecc_off(ARCHETYPES["ws-rtx6000ada"])))["cuda.ecc_mode"]
    assert mode.status == "ok", mode.observed


def test_a_power_cap_on_gpus_no_process_uses_beside_a_working_server_is_low() -> None:
    """The sixth review's H3: vLLM at TP 4 on GPUs 0-3, GPUs 4-7 capped and idle: the cap slows nothing now."""
    from dataclasses import replace

    from rigaudit.agents.investigators.power import INVESTIGATOR as POWER

    hgx = ARCHETYPES["hgx-h100-jammy"]
    server = replace(hgx.processes[0], gpus=(0, 1, 2, 3))
    limits = tuple(700 if g < 4 else 350 for g in range(8))
    spec = replace(hgx, name=hgx.name + "+spares-capped", processes=(server,), gpus=replace(hgx.gpus, power_limit_w=limits))
    finding = audit_snapshot(POWER, snapshot(spec))["power.gpu_power_limit"]
    assert (finding.status, finding.severity) == ("problem", "low"), finding.observed
    assert "No process runs on GPU4" in finding.explanation
    busy = tuple(350 for _ in range(8))
    capped = replace(spec, name=hgx.name + "+all-capped", gpus=replace(hgx.gpus, power_limit_w=busy))
    assert audit_snapshot(POWER, snapshot(capped))["power.gpu_power_limit"].severity == "medium"
