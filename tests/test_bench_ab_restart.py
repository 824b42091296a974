"""bench ab with arms that restart the server: every visit a restart, journaled; the server left as found, always.

The arms' commands are real shell commands (``echo fix >> STATE``); the server is the in-process fake of
rigaudit.tools.testing.restart_fake, which serves as the state file's last line says, on a scripted clock.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.bench.restart import RestartOptions, plan_power, run_restart_ab
from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.journal import read_journal
from rigaudit.tools.bench.ab import analyze
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.loadgen import Load, LoadSpec
from rigaudit.tools.bench.power import cycles_for, detectable
from rigaudit.tools.bench.restart import ArmCommand, SwitchFailed, parse_arms, wait_ready
from rigaudit.tools.core.errors import NotApprovedError, UsageError
from rigaudit.tools.testing.restart_fake import RestartedServer

SPEC = LoadSpec(base_url="http://127.0.0.1:9", model="m", concurrency=(1,), requests=3, max_tokens=8, warmup=1)
PACES = {"base": 0.010, "fix": 0.020, "same": 0.010}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestartedServer]:
    state = tmp_path / "state"
    state.write_text("base\n")
    yield RestartedServer(state, PACES, session_cv=0.01, request_cv=0.01)


def _arms(server: RestartedServer, *names: str, fail: str | None = None) -> list[ArmCommand]:
    def command(name: str) -> str:
        return "echo starting >&2; exit 3" if name == fail else f"echo {name} >> {server.state}"

    return [ArmCommand(n, command(n)) for n in names]


def _run(server: RestartedServer, arms: list[ArmCommand], tmp_path: Path, **options: object) -> tuple[object, Path]:
    journal = tmp_path / "j.jsonl"
    opts = RestartOptions(cycles=int(options.pop("cycles", 3)), **options)  # type: ignore[arg-type]
    outcome = run_restart_ab(arms, SPEC, StepApprover("", assume_yes=True), journal, opts, Settings(), load=server.load())
    return outcome, journal


def _restarts(journal: Path) -> list[tuple[str, str]]:
    entries, _ = read_journal(journal)
    return [(e.step_id, e.state or "") for e in entries if e.kind == "change"]


def test_restarts_before_every_visit_finds_the_change_and_ends_on_the_baseline(server: RestartedServer, tmp_path: Path) -> None:
    outcome, journal = _run(server, _arms(server, "base", "fix"), tmp_path, cycles=3)
    result = outcome.result  # type: ignore[attr-defined]
    assert result.complete and result.restored == "base" and server.lines()[-1] == "base"
    # A B, B A, A B: six visits, each after its own restart, then one back to base (the last visit was fix)
    assert [v.arm for v in result.visits] == ["base", "fix", "fix", "base", "base", "fix"]
    assert server.lines()[1:] == ["base", "fix", "fix", "base", "base", "fix", "base"]
    assert all(v.switched and v.ready_s is not None for v in result.visits)
    states = _restarts(journal)
    assert states.count(("restart:fix", "planned")) == 3 and states.count(("restart:fix", "verified")) == 3
    assert states[-2:] == [("restart:base", "planned"), ("restart:base", "verified")]
    level = analyze(result).arms[0].levels[0]
    assert level.verdict == "regressed"
    assert level.headline.change is not None and -0.55 < level.headline.change < -0.45  # twice as slow a token


def test_identical_arms_are_not_called_a_change(server: RestartedServer, tmp_path: Path) -> None:
    outcome, _ = _run(server, _arms(server, "base", "same"), tmp_path, cycles=4)
    verdicts = {m.verdict for lv in analyze(outcome.result).arms[0].levels for m in lv.metrics}  # type: ignore[attr-defined]
    assert not verdicts & {"improved", "regressed"}


def test_a_failed_start_stops_the_session_and_restarts_the_baseline(server: RestartedServer, tmp_path: Path) -> None:
    outcome, journal = _run(server, _arms(server, "base", "fix", fail="fix"), tmp_path)
    result = outcome.result  # type: ignore[attr-defined]
    assert not result.complete and "fix: the command exited 3 (starting)" in (result.error or "")
    assert result.restored == "base" and server.lines()[-1] == "base"
    assert ("restart:fix", "failed") in _restarts(journal)


def test_a_server_that_never_serves_after_a_restart_fails_within_the_deadline(server: RestartedServer, tmp_path: Path) -> None:
    arms = [ArmCommand("base", f"echo base >> {server.state}"), ArmCommand("fix", f"echo down >> {server.state}")]
    outcome, _ = _run(server, arms, tmp_path, ready_timeout_s=5.0)
    result = outcome.result  # type: ignore[attr-defined]
    assert "served no token within" in (result.error or "") and "HTTP 503" in (result.error or "")
    assert server.lines()[-1] == "base" and result.restored == "base"


def test_ctrl_c_mid_visit_restarts_the_baseline(server: RestartedServer, tmp_path: Path) -> None:
    def interrupt(number: int, arm: str) -> None:
        if arm == "fix":
            raise KeyboardInterrupt

    server.on_request = interrupt
    outcome, _ = _run(server, _arms(server, "base", "fix"), tmp_path)
    assert outcome.interrupted and outcome.result.error == "interrupted (Ctrl-C)"  # type: ignore[attr-defined]
    assert server.lines()[-1] == "base" and outcome.result.restored == "base"  # type: ignore[attr-defined]


def test_end_on_leaves_the_chosen_arm(server: RestartedServer, tmp_path: Path) -> None:
    outcome, _ = _run(server, _arms(server, "base", "fix"), tmp_path, cycles=2, end_on="fix")
    assert server.lines()[-1] == "fix" and outcome.result.restored == "fix"  # type: ignore[attr-defined]


def test_nothing_answering_before_the_first_restart_is_refused(server: RestartedServer, tmp_path: Path) -> None:
    server.state.write_text("")
    with pytest.raises(UsageError, match="start the server as base before bench ab"):
        _run(server, _arms(server, "base", "fix"), tmp_path)
    assert server.lines() == [] and not (tmp_path / "j.jsonl").exists()


def test_not_approved_restarts_nothing(server: RestartedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rigaudit.orchestrator.change.approval.is_interactive", lambda: False)
    with pytest.raises(NotApprovedError):
        approver = StepApprover("", assume_yes=False)
        run_restart_ab(_arms(server, "base", "fix"), SPEC, approver, tmp_path / "j", RestartOptions(), Settings())
    assert server.lines() == ["base"] and not (tmp_path / "j").exists()


@pytest.mark.parametrize(
    ("texts", "said"),
    [
        (["base=true"], "wants two or more"),
        (["base=true", "base=false"], "--arm base is given twice"),
        (["base", "fix=true"], "--arm wants NAME='COMMAND'"),
        (["b c=true", "fix=true"], "letters, digits"),
        (["base=", "fix=true"], "--arm wants NAME='COMMAND'"),
    ],
)
def test_arms_that_do_not_make_a_session_are_one_line(texts: list[str], said: str) -> None:
    with pytest.raises(UsageError, match=said):
        parse_arms(texts)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--arm", "a=true", "--arm", "b=true", "--plan", "p.json"], "does not go with --plan"),
        (["--arm", "a=true", "--arm", "b=true", "--end-on", "c"], "--end-on c: no such arm"),
        (["--arm", "a=true", "--arm", "b=true", "--cycles", "1"], "--cycles wants 2 to 100"),
        (["--end-on", "a"], "--end-on names an --arm"),
    ],
)
def test_cli_refusals_exit_2_with_one_line(
    extra: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "ab", "--base-url", "http://127.0.0.1:9", "--model", "m", "--yes", "--no-transcript", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err
    assert not list(tmp_path.iterdir())


def test_the_cli_runs_restart_arms_and_writes_what_ran(
    server: RestartedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    faked = functools.partial(run_restart_ab, load=server.load())
    monkeypatch.setattr("rigaudit.orchestrator.bench.restart.run_restart_ab", faked)
    arms = [f"{a.name}={a.command}" for a in _arms(server, "base", "fix")]
    argv = ["bench", "ab", "--arm", arms[0], "--arm", arms[1], "--base-url", SPEC.base_url, "--model", "m", "--concurrency", "1"]
    argv += ["--requests", "3", "--max-tokens", "8", "--cycles", "2", "--yes", "--no-transcript"]
    argv += ["--json", str(tmp_path / "ab.json")]
    argv += ["--journal", str(tmp_path / "j.jsonl")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "at 2 cycles, every visit a new server session" in out and "left as base" in out
    data = json.loads((tmp_path / "ab.json").read_text())
    assert data["restarts"] and data["baseline"] == "base" and data["arms"][1]["command"] == arms[1].split("=", 1)[1]
    assert server.lines()[-1] == "base"


def test_power_shrinks_with_cycles_and_cycles_for_meets_it() -> None:
    sd = math.sqrt(2) * 0.08
    found = [detectable(sd, n, alpha=0.05, paired=True) for n in (2, 4, 8, 16)]
    assert all(f is not None for f in found)
    assert found == sorted(found, reverse=True)  # type: ignore[type-var]
    n = cycles_for(sd, 0.30, alpha=0.05)
    assert n is not None and detectable(sd, n, alpha=0.05, paired=True) <= 0.30 < detectable(sd, n - 1, alpha=0.05, paired=True)  # type: ignore[operator]
    assert detectable(sd, 1, alpha=0.05, paired=True) is None
    assert "at 6 cycles" in plan_power(SPEC, 2, 6, Settings()) and "8% between sessions" in plan_power(SPEC, 2, 6, Settings())


def test_a_restart_step_named_by_only_asks_for_the_two_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    step = {"id": "runtime.env", "check": "runtime.env", "priority": "P0", "kind": "restart", "where": "host"}
    step |= {"title": "Unset CUDA_LAUNCH_BLOCKING in the server's launch environment and restart it"}
    (tmp_path / "plan.json").write_text(json.dumps({"steps": [step]}))
    argv = ["bench", "ab", "--plan", "plan.json", "--only", "runtime.env", "--base-url", "http://127.0.0.1:9", "--model", "m"]
    assert main([*argv, "--yes", "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip()
    assert "runtime.env needs a server restart (Unset CUDA_LAUNCH_BLOCKING" in err and "--arm base=" in err
    assert "\n" not in err


def test_waiting_for_a_down_server_ends_when_the_remainder_is_below_the_clocks_resolution(server: RestartedServer) -> None:
    # A deadline whose remainder rounds away when added to the clock (here 2.8e-14 s at 1005 s) must still end the wait.
    server.state.write_text("down\n")
    server.clock.now = 1000.4295548755265
    load = server.load()
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        assert len(sleeps) < 100, "the wait does not end"
        await server.clock.sleep(seconds)

    counted = Load(connect=load.connect, clock=load.clock, sleep=sleep)
    waiting = functools.partial(wait_ready, SPEC, timeout_s=4.9974275410000075, load=counted)
    with pytest.raises(SwitchFailed, match="served no token within"):
        anyio.run(waiting)
    assert len(sleeps) <= 11
