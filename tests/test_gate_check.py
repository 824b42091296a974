"""``rigaudit check``: exit statuses, the reason line, selection, deadline and outputs, on real fixtures."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rigaudit.agents.catalog import catalog
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.promised import CHECKS as PROMISED
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.check import CheckResult
from tests.support.fleet import degrade_link
from tests.support.mutate import light_copy, set_file

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"
H200 = FIXTURES / "h200x2-vm"
SEED_MEDIUM = ("numa.balancing", "pcie.mrrs", "power.scaling_driver")
"""The seed's problems at medium (the story's host tunes badly, but nothing is broken); power.cstates is low there (no
server visible, so the batch-1 premise of its medium is unread)."""


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    try:
        code = main(["check", *args])
    except SystemExit as exc:  # refused as it was parsed (a number option: tests/test_number_options.py)
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.fixture
def degraded(tmp_path: Path) -> Path:
    """The seed with GPU3's link trained at Gen4 x8: a pcie.link problem of high severity."""
    root = light_copy(SEED, tmp_path / "degraded")
    degrade_link(root)
    return root


@pytest.mark.parametrize("fixture", [SEED, H200, FIXTURES / "h200x1-vm"], ids=lambda p: p.name)
def test_healthy_fixtures_exit_0_with_a_healthy_reason(capsys: pytest.CaptureFixture[str], fixture: Path) -> None:
    code, lines, _ = check(capsys, "--snapshot", str(fixture))
    assert code == 0
    assert lines[0].startswith("healthy: no problem at or above high in ")
    assert f"in {len(catalog()) + len(PROMISED)} checks" in lines[0]
    assert lines[-1].endswith("exit 0")


def test_a_degraded_link_is_a_problem_named_first(capsys: pytest.CaptureFixture[str], degraded: Path) -> None:
    code, lines, _ = check(capsys, "--snapshot", str(degraded))
    assert code == 1
    assert lines[0].startswith("pcie.link high: GPU3 (0000:44:00.0)")
    assert "x8" in lines[0]
    assert any(line.split()[:2] == ["pcie.link", "high"] for line in lines[1:-1])


def test_fail_on_sets_the_threshold(capsys: pytest.CaptureFixture[str], degraded: Path) -> None:
    assert check(capsys, "--snapshot", str(degraded), "--fail-on", "critical")[0] == 0
    code, lines, _ = check(capsys, "--snapshot", str(SEED), "--fail-on", "medium")
    assert code == 1
    named = lines[0].split(":")[0]
    assert all(f"{c} medium" in named or "more" in named for c in SEED_MEDIUM)


def test_skip_and_only_select_by_id_and_area(capsys: pytest.CaptureFixture[str], degraded: Path, tmp_path: Path) -> None:
    assert check(capsys, "--snapshot", str(degraded), "--skip", "pcie.link")[0] == 0
    assert check(capsys, "--snapshot", str(degraded), "--skip", "pcie")[0] == 0
    out = tmp_path / "only.json"
    code, lines, _ = check(capsys, "--snapshot", str(degraded), "--only", "pcie,gpu.xid", "--json", str(out))
    assert code == 1
    result = CheckResult.model_validate_json(out.read_text())
    pcie = [c.id for c in catalog() if c.area == "pcie"]
    assert [c.check for c in result.checks] == [*pcie, "gpu.xid"]
    assert {f.check for f in result.audit.findings} == {*pcie, "gpu.xid"}
    assert f"in {len(pcie) + 1} checks" not in lines[0]  # a problem's reason, not a count


def test_renamed_area_names_select_their_successors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert check(capsys, "--snapshot", str(H200), "--only", "nccl_p2p", "--json", str(out))[0] == 0
    areas = {c.area for c in CheckResult.model_validate_json(out.read_text()).checks}
    assert areas == {"p2p", "nccl"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--only", "pcie.nope"], "--only: no check or area named pcie.nope"),
        (["--skip", "bogus,pcie"], "--skip: no check or area named bogus"),
        (["--only", ","], "--only needs check ids or areas"),
        (["--only", "pcie", "--skip", "pcie"], "leave no check to judge"),
        (["--deadline", "0"], "--deadline: 0: the deadline must be more than 0"),
        (["--deadline", "nan"], "--deadline: nan: the deadline must be more than 0"),
        (["--deadline", "7200"], "--deadline must be more than 0 and at most 3600 seconds"),
        (["--prometheus", "{tmp}/file/x.prom"], "{tmp}/file is not a directory"),
        (["--prometheus", "metrics.txt"], "node_exporter reads only files named *.prom"),
        (["--quiet", "--verbose"], "exclude each other"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], said: str
) -> None:
    said = said.format(tmp=tmp_path)
    (tmp_path / "file").write_text("")
    code, lines, err = check(capsys, "--snapshot", str(H200), *(arg.format(tmp=tmp_path) for arg in args))
    assert code == 2
    assert lines == []
    [line] = err.strip().splitlines()
    assert said in line and "Traceback" not in err


def test_not_a_snapshot_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, lines, err = check(capsys, "--snapshot", str(tmp_path))
    assert code == 2 and lines == [] and err.startswith("rigaudit: ")


def test_the_deadline_makes_unfinished_checks_not_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "late.json"
    code, lines, _ = check(
        capsys, "--snapshot", str(H200), "--replay-latency-ms", "60000", "--deadline", "0.25", "--json", str(out)
    )
    assert code == 3
    assert lines[0].startswith("could not check: ") and "no answer within the 0.25 s deadline" in lines[0]
    result = CheckResult.model_validate_json(out.read_text())
    assert result.verdict == "could_not_check" and result.exit_code == 3
    assert result.duration_s < 30  # every host operation takes 60 s: the deadline, not the checks, ended the run
    assert {c.status for c in result.checks} == {"not_checked"}


def test_strict_counts_an_unknown_as_could_not_check(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--snapshot", str(H200), "--only", "gpu.app_clocks")
    assert check(capsys, *args)[0] == 0
    code, lines, _ = check(capsys, *args, "--strict")
    assert code == 3
    assert lines[0].startswith("could not check: gpu.app_clocks (nvmlDeviceGetApplicationsClock")


def test_quiet_prints_the_reason_alone(capsys: pytest.CaptureFixture[str], degraded: Path) -> None:
    code, lines, _ = check(capsys, "--snapshot", str(degraded), "-q")
    assert code == 1 and len(lines) == 1 and lines[0].startswith("pcie.link high")


def test_json_result_is_the_published_shape(capsys: pytest.CaptureFixture[str], degraded: Path) -> None:
    code, lines, err = check(capsys, "--snapshot", str(degraded), "--json", "-")
    assert code == 1
    data = json.loads("\n".join(lines))
    assert data["schema"] == "rigaudit.check/1"
    assert err.splitlines()[0] == data["reason"]  # the text goes to stderr when the JSON takes stdout
    result = CheckResult.model_validate(data)
    assert result.verdict == "problem" and result.fail_on == "high"
    assert len(result.checks) == len(catalog()) + len(PROMISED)
    assert [c.check for c in result.checks if c.counts] == ["pcie.link"]
    assert result.audit.evidence == ()
    assert result.facts["GPU3 PCIe link"] == "16.0 GT/s x8"  # the fingerprint the fleet compares
    assert result.facts["driver"] == "580.95.05"


def test_no_transcript_unless_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = Path(os.environ["XDG_STATE_HOME"])
    assert check(capsys, "--snapshot", str(H200))[0] == 0
    assert not state.exists() or not any(state.rglob("*.jsonl"))
    transcript = tmp_path / "check.jsonl"
    assert check(capsys, "--snapshot", str(H200), "--transcript", str(transcript))[0] == 0
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    kinds = [e.get("type") or e.get("kind") for e in events]
    assert "session_started" in kinds[:2] and kinds[-1] == "session_ended"
    assert events[-1].get("exit_code") == 0


def test_prometheus_textfile_is_written_readable_and_atomically(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "rigaudit.prom"
    path.write_text("old\n")
    assert check(capsys, "--snapshot", str(H200), "--prometheus", str(path))[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["rigaudit.prom"]  # no temporary file left
    assert 'rigaudit_check_verdict{Hostname="vm"} 0' in path.read_text()  # 0: healthy


def test_an_output_that_cannot_be_written_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rigaudit.orchestrator.gate.prometheus as prometheus

    def refuse(path: Path, text: str, *, mode: int | None = None, through: bool = True) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(prometheus, "atomic_write_text", refuse)
    code, lines, err = check(capsys, "--snapshot", str(H200), "--prometheus", str(tmp_path / "r.prom"))
    assert code == 3 and lines[0].startswith("healthy:")
    assert "cannot write" in err and "Permission denied" in err


def test_a_bug_of_rigaudit_is_could_not_check_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rigaudit.orchestrator.gate.run as run

    async def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(run, "run_gate", broken)
    code, lines, err = check(capsys, "--snapshot", str(H200))
    assert code == 4
    assert lines == ["could not check: rigaudit failed: ValueError: boom"]
    assert "Traceback" not in err


def test_a_corrupt_file_in_the_snapshot_is_not_a_crash(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = light_copy(H200, tmp_path / "corrupt")
    host = SnapshotHost(root)
    set_file(root, host.resolve("/proc/cpuinfo"), b"\xff\xfe garbage \x00" * 100)
    set_file(root, host.resolve("/proc/sys/kernel/osrelease"), b"")
    code, lines, err = check(capsys, "--snapshot", str(root))
    assert code in (0, 1, 3)
    assert "Traceback" not in err and lines[0].split(":")[0]


def test_the_watchdog_ends_a_hung_check_with_exit_3() -> None:
    """A read blocked where cancellation cannot reach it: the process ends past the deadline, exit 3."""
    program = (
        "import time; from rigaudit.orchestrator.gate.watchdog import Watchdog\n"
        "with Watchdog(0.2, 'could not check: stopped'):\n"
        "    time.sleep(30)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=20)
    assert done.returncode == 3
    assert done.stdout == "could not check: stopped\n"
