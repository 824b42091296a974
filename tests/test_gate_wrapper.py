"""deploy/slurm/rigaudit-health with stand-ins for rigaudit and scontrol: what it does with each answer, fast.

``tests/test_slurm_health.py`` runs it under a real slurmd; here each case is a shell script that answers as
rigaudit would (or as a broken install does), and a stand-in ``scontrol`` that records what it was asked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parent.parent / "deploy" / "slurm" / "rigaudit-health"


def _wrapper(tmp_path: Path, rigaudit: str, *, command: str | None = None) -> tuple[int, str, str]:
    """Run the wrapper with --drain in health mode; ``rigaudit`` is the stand-in's body. Its exit status, what
    the stand-in was called with, and what scontrol was asked."""
    fake = tmp_path / "fake-rigaudit"
    fake.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv"}\n{rigaudit}\n')
    fake.chmod(0o755)
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "asked"}\n')
    scontrol.chmod(0o755)
    conf = tmp_path / "health.conf"
    conf.write_text(f'RIGAUDIT="{command or fake}"\nSCONTROL={scontrol}\nRIGAUDIT_DRAIN=1\n')
    env = {**os.environ, "RIGAUDIT_SLURM_CONF": str(conf), "SLURMD_NODENAME": "gpu7"}
    done = subprocess.run(["/bin/sh", str(WRAPPER), "--mode", "health"], env=env, capture_output=True, text=True, timeout=60)
    argv, asked = tmp_path / "argv", tmp_path / "asked"
    return done.returncode, argv.read_text() if argv.exists() else "", asked.read_text() if asked.exists() else ""


def test_a_problem_drains_with_its_reason(tmp_path: Path) -> None:
    code, _, asked = _wrapper(tmp_path, 'echo "problem: pcie.link_degraded GPU0 at Gen4 x8"; exit 1')
    assert code == 0
    assert "state=drain" in asked and "reason=rigaudit: problem: pcie.link_degraded GPU0 at Gen4 x8" in asked


@pytest.mark.parametrize(
    "answer",
    [
        "echo \"ModuleNotFoundError: No module named 'rigaudit'\" >&2; exit 1",  # python3 -m rigaudit, not installed
        'echo "Traceback (most recent call last):" >&2; exit 1',  # a broken install: an uncaught exception exits 1
        'echo; echo "problem: x"; exit 1',  # no reason on the first line
    ],
    ids=["missing-module", "traceback", "empty-first-line"],
)
def test_exit_1_without_a_reason_line_is_could_not_check_and_never_drains(tmp_path: Path, answer: str) -> None:
    """Python exits 1 on an uncaught exception: exit 1 is a problem only with the reason rigaudit prints first."""
    code, _, asked = _wrapper(tmp_path, answer)
    assert code == 0
    assert "drain" not in asked


def test_rigaudit_may_be_a_command_line(tmp_path: Path) -> None:
    """RIGAUDIT="python3 -S -m rigaudit" (split on blanks, as RIGAUDIT_ARGS): the cheapest start (docs/performance.md)."""
    fake = tmp_path / "fake-rigaudit"
    code, argv, asked = _wrapper(tmp_path, 'echo "healthy: no problem"; exit 0', command=f"{fake} -S -m rigaudit")
    assert code == 0
    assert argv.split() == ["-S", "-m", "rigaudit", "check"]
    assert "drain" not in asked
