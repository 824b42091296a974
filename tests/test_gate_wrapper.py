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


def _run(tmp_path: Path, conf: Path, rigaudit: str = 'echo "pcie.link high: GPU0"; exit 1') -> tuple[int, str, str]:
    """The wrapper with the settings ``conf`` (rigaudit and scontrol stand-ins in ``tmp_path``): its exit status,
    its stderr, and what scontrol was asked."""
    fake, scontrol = tmp_path / "fake-rigaudit", tmp_path / "scontrol"
    fake.write_text(f"#!/bin/sh\n{rigaudit}\n")
    scontrol.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "asked"}\n')
    fake.chmod(0o755)
    scontrol.chmod(0o755)
    env = {**os.environ, "RIGAUDIT_SLURM_CONF": str(conf), "SLURMD_NODENAME": "gpu7"}
    done = subprocess.run(["/bin/sh", str(WRAPPER), "--mode", "health"], env=env, capture_output=True, text=True, timeout=60)
    asked = tmp_path / "asked"
    return done.returncode, done.stderr, asked.read_text() if asked.exists() else ""


def _settings(tmp_path: Path, folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "health.conf"
    conf.write_text(f"RIGAUDIT={tmp_path / 'fake-rigaudit'}\nSCONTROL={tmp_path / 'scontrol'}\nRIGAUDIT_DRAIN=1\n{extra}")
    conf.chmod(0o644)
    return conf


root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the settings file is judged as root runs it")


@root_only
@pytest.mark.parametrize("where", ["file writable by others", "file writable by its group", "folder writable by others"])
def test_settings_others_can_change_are_never_run_as_root(tmp_path: Path, where: str) -> None:
    """The settings file is shell code run as root: one that others could have written is not read, nothing is
    run or drained, and the line says why."""
    folder = tmp_path / "etc"
    conf = _settings(tmp_path, folder, f"touch {tmp_path / 'ran'}\n")
    if where.startswith("file"):
        conf.chmod(0o646 if "others" in where else 0o664)
    else:
        folder.chmod(0o777)
    code, err, asked = _run(tmp_path, conf)
    assert code == 0 and asked == "" and not (tmp_path / "ran").exists()
    assert "is not only root's to change" in err and "never drained" in err


@root_only
def test_settings_in_a_sticky_folder_or_root_s_own_are_read(tmp_path: Path) -> None:
    sticky = tmp_path / "sticky"
    conf = _settings(tmp_path, sticky)
    sticky.chmod(0o1777)
    code, _, asked = _run(tmp_path, conf)
    assert code == 0 and "state=drain" in asked


@root_only
def test_a_link_to_settings_in_a_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    """The swap race class: a root-owned link in root's folder leads to a root-owned file in a folder another
    user owns (who could swap the file between the check and the read). The real path is judged: refused."""
    theirs = tmp_path / "theirs"
    real = _settings(tmp_path, theirs, f"touch {tmp_path / 'ran'}\n")
    theirs.chmod(0o755)
    os.chown(theirs, 65534, 65534)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "health.conf").symlink_to(real)
    code, err, asked = _run(tmp_path, etc / "health.conf")
    assert code == 0 and asked == "" and not (tmp_path / "ran").exists()
    assert "is not only root's to change" in err


@root_only
def test_a_link_in_a_folder_others_write_to_root_s_own_settings_reads_the_real_file(tmp_path: Path) -> None:
    """The link may be swapped after the check, so the resolved file is the one judged and read."""
    real = _settings(tmp_path, tmp_path / "etc")
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    (open_folder / "health.conf").symlink_to(real)
    code, _, asked = _run(tmp_path, open_folder / "health.conf")
    assert code == 0 and "state=drain" in asked


def test_the_log_is_never_written_through_a_link_or_into_a_fifo(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "link.log").symlink_to(victim)
    os.mkfifo(logs / "fifo.log")
    for name in ("link.log", "fifo.log"):
        conf = _settings(tmp_path, tmp_path / f"etc-{name}", f"RIGAUDIT_LOG={logs / name}\n")
        code, _, asked = _run(tmp_path, conf)  # a FIFO no one reads would hang an append: timeout=60 says so
        assert code == 0 and "state=drain" in asked
    assert victim.read_text() == "kept\n"
    conf = _settings(tmp_path, tmp_path / "etc-plain", f"RIGAUDIT_LOG={logs / 'plain.log'}\n")
    assert _run(tmp_path, conf)[0] == 0 and "action=drained" in (logs / "plain.log").read_text()


def test_the_reason_scontrol_gets_is_printable_ascii_of_at_most_200_bytes(tmp_path: Path) -> None:
    conf = _settings(tmp_path, tmp_path / "etc")
    line = "pcie.link high: GPU0 \\033]0;x\\007 “quoted” \\001 ‘x’ $(reboot) `id` ; rm -rf / " + "é" * 300
    code, _, asked = _run(tmp_path, conf, f"printf '{line}\\n'; exit 1")
    reason = asked.split("reason=", 1)[1].rstrip("\n")
    assert code == 0 and reason.startswith("rigaudit: pcie.link high: GPU0 ]0;x quoted  x $(reboot) `id` ; rm -rf /")
    assert all(" " <= c <= "~" for c in reason) and len(reason.encode()) <= len("rigaudit: ") + 200
