"""bench ab end to end on a snapshot copy, against a fake server whose speed follows the file the switch writes.

The verdicts are asserted on the scripted client and clock (``speed``): the figures are the same on an idle
machine and a busy one. The loopback server (``speed_server``) is for what speed does not decide.
"""

from __future__ import annotations

import functools
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.bench.ab import AbOptions, Load, ab_steps, arms_for, run_ab
from rigaudit.orchestrator.change.approval import StepApprover
from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.journal import read_journal
from rigaudit.tools.actions.rollback import pending_changes
from rigaudit.tools.bench.ab import analyze
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.plan import Plan
from tests.support.bench_ab import (
    FAST,
    JITTER,
    NUMA,
    SLOW,
    SWAPPINESS,
    FailingHost,
    SpeedClient,
    make_plan,
    make_snapshot,
    speed_server,
    tree_digest,
    value,
)

LOAD = ["--concurrency", "1,2", "--requests", "3", "--max-tokens", "8", "--warmup", "1"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("rigaudit.orchestrator.change.approval.is_interactive", lambda: False)
    make_snapshot(tmp_path / "src")
    make_plan(tmp_path / "plan.json")
    yield tmp_path


@pytest.fixture
def speed(work: Path, monkeypatch: pytest.MonkeyPatch) -> SpeedClient:
    """The command line as it is, its load sent through the scripted client and timed on its clock."""
    client = SpeedClient(work / "copy")
    load = Load(client.connect, client.clock)
    monkeypatch.setattr("rigaudit.orchestrator.bench.ab.run_ab", functools.partial(run_ab, load=load))
    return client


NOWHERE = "http://127.0.0.1:9"  # nothing listens: a request that escaped the scripted client fails the test
TOKENS = 8  # --max-tokens in LOAD
RATIO = (SLOW.ttft_s + (TOKENS - 1) * SLOW.itl_s) / (FAST.ttft_s + (TOKENS - 1) * FAST.itl_s)
"""How much faster a request streams with the fix: output tok/s x 2.6 (68 ms a request against 26 ms)."""
LOW, HIGH = RATIO * (1 - JITTER) / (1 + JITTER) - 1, RATIO * (1 + JITTER) / (1 - JITTER) - 1
"""Every run's change lies here, whatever the jitter drew (each request's pace is off by at most JITTER)."""


def _ab(work: Path, url: str, only: str, *extra: str) -> int:
    argv = ["bench", "ab", "--plan", str(work / "plan.json"), "--only", only, "--snapshot", str(work / "src")]
    argv += ["--into", str(work / "copy"), "--base-url", url, "--model", "m", *LOAD, "--journal", str(work / "j.jsonl")]
    return main([*argv, "--no-transcript", *extra])


def _all_reverted(journal: Path) -> bool:
    entries, _ = read_journal(journal)
    pending = pending_changes(entries)
    return bool(pending) and all(outcome is not None and outcome.state == "reverted" for _, outcome in pending)


def test_interleaves_a_and_b_measures_the_known_gain_and_rolls_back(
    work: Path, speed: SpeedClient, capsys: pytest.CaptureFixture[str]
) -> None:
    pristine = tree_digest(work / "src")
    code = _ab(work, NOWHERE, "vm.swappiness", "--cycles", "4", "--yes", "--json", str(work / "ab.json"))
    assert code == 0, capsys.readouterr()
    data = json.loads((work / "ab.json").read_text())
    assert data["schema"] == "rigaudit.ab/1" and data["complete"] is True and data["error"] is None
    # A B, B A, A B, B A: the arms alternate in a balanced order, each visit running both levels
    assert [(v["cycle"], v["arm"]) for v in data["visits"]] == [
        (0, "baseline"), (0, "vm.swappiness"), (1, "vm.swappiness"), (1, "baseline"),
        (2, "baseline"), (2, "vm.swappiness"), (3, "vm.swappiness"), (3, "baseline"),
    ]  # fmt: skip
    # the server really saw the fix exactly during the fix's visits: 1 warm-up + 8 visits x (1 settle + 2 levels x 3)
    seen = speed.seen
    assert len(seen) == 1 + 8 * 7 and seen[0] == "60"
    assert seen[1:] == [s for v in data["visits"] for s in ["10" if v["arm"] == "vm.swappiness" else "60"] * 7]
    arm = next(a for a in data["comparison"]["arms"] if a["arm"] == "vm.swappiness")
    assert [level["concurrency"] for level in arm["levels"]] == [1, 2]
    for level in arm["levels"]:
        head = level["metrics"][0]
        assert head["metric"] == "output_tokens_per_s" and level["verdict"] == "improved"
        assert LOW < head["ci_low"] <= head["change"] <= head["ci_high"] < HIGH  # 2.6x faster streams, within the jitter
        assert level["base_repeats"] == 4  # four A/B pairs
    out = capsys.readouterr().out
    assert "vm.swappiness bought in output tok/s: c=1: +" in out and "paired t interval" in out
    # back to A: the copy is byte for byte the source, every change in the journal is reverted
    assert tree_digest(work / "copy") == pristine and value(work / "copy", SWAPPINESS) == "60"
    assert _all_reverted(work / "j.jsonl")
    assert main(["rollback", str(work / "j.jsonl"), "--snapshot", str(work / "copy"), "--yes", "--no-transcript"]) == 0
    assert "nothing to restore" in capsys.readouterr().out


def test_each_step_gets_its_share(work: Path, speed: SpeedClient, capsys: pytest.CaptureFixture[str]) -> None:
    # one level; a 15% floor: the null step's runs differ by the jitter alone (at most about 10.5%)
    extra = ("--cycles", "3", "--concurrency", "1", "--noise-floor", "0.15", "--yes", "--json", str(work / "ab.json"))
    code = _ab(work, NOWHERE, "vm.swappiness,numa.balancing", *extra)
    assert code == 0
    data = json.loads((work / "ab.json").read_text())
    arms = {a["arm"]: a for a in data["comparison"]["arms"]}
    assert set(arms) == {"vm.swappiness", "numa.balancing", "all steps"}
    assert {a["name"] for a in data["arms"]} == {"baseline", "vm.swappiness", "numa.balancing", "all steps"}
    for name in ("vm.swappiness", "all steps"):
        (level,) = arms[name]["levels"]
        head = level["metrics"][0]
        assert level["verdict"] == "improved" and LOW < head["ci_low"] <= head["change"] <= head["ci_high"] < HIGH
    # NUMA balancing does nothing for this server: never called a change, its change within the jitter
    (null,) = arms["numa.balancing"]["levels"]
    assert all(m["verdict"] not in ("improved", "regressed") for m in null["metrics"])
    assert abs(null["metrics"][0]["change"]) < (1 + JITTER) / (1 - JITTER) - 1
    out = capsys.readouterr().out
    assert "numa.balancing bought in output tok/s" in out and "the steps alone compound to" in out
    assert value(work / "copy", SWAPPINESS) == "60" and value(work / "copy", NUMA) == "1"


@pytest.mark.parametrize(
    ("fail_at", "error", "visited"),
    [
        # the order is baseline, all steps, vm.swappiness, numa.balancing; writes: 1 swappiness on, 2 numa on ...
        (2, "applying numa.balancing failed: kernel.numa_balancing: write refused", ["baseline"]),
        # ... 3 numa off, 4 swappiness off, 5 swappiness on (alone), 6 swappiness off: refused
        (6, "rolling back vm.swappiness failed: vm.swappiness: restore refused", ["baseline", "all steps", "vm.swappiness"]),
    ],
)
def test_a_switch_that_fails_mid_run_rolls_everything_back(work: Path, fail_at: int, error: str, visited: list[str]) -> None:
    copy = work / "copy"
    pristine = tree_digest(work / "src")
    shutil.copytree(work / "src", copy)
    plan = Plan.model_validate_json((work / "plan.json").read_text())
    options = AbOptions(cycles=3)
    steps = ab_steps(plan, ["vm.swappiness", "numa.balancing"], options)
    FailingHost.writes = 0
    with speed_server(copy) as server:
        spec = LoadSpec(server.base_url, "m", concurrency=(1,), requests=2, max_tokens=4, warmup=0)
        outcome = run_ab(
            lambda: FailingHost(copy, fail_at=fail_at),
            plan,
            steps,
            spec,
            StepApprover("h", assume_yes=True),
            work / "j.jsonl",
            options,
        )
    result = outcome.result
    assert result.complete is False and result.error is not None and result.error.startswith(error), result.error
    assert not outcome.interrupted and outcome.restore_error is None and outcome.restore_failed == []
    assert [v.arm for v in result.visits] == visited  # what ran is kept
    assert tree_digest(copy) == pristine and _all_reverted(work / "j.jsonl")
    assert analyze(result).warnings[0].startswith(f"the session stopped early ({error}")


@pytest.mark.slow
def test_ctrl_c_mid_run_rolls_back_and_keeps_what_ran(work: Path) -> None:
    pristine = tree_digest(work / "src")
    proc: list[subprocess.Popen[str]] = []
    sent: list[int] = []

    def interrupt(number: int, state: str) -> None:
        # the second request served with the fix in place: B is applied, a level is half done
        if state == "10" and not sent and len([s for s in server.seen if s == "10"]) == 2:
            sent.append(number)
            proc[0].send_signal(signal.SIGINT)

    with speed_server(work / "copy") as server:
        server.on_request = interrupt
        argv = [sys.executable, "-m", "rigaudit", "bench", "ab", "--plan", "plan.json", "--only", "vm.swappiness"]
        argv += ["--snapshot", "src", "--into", "copy", "--base-url", server.base_url, "--model", "m", *LOAD]
        argv += ["--cycles", "4", "--yes", "--journal", "j.jsonl", "--json", "ab.json", "--no-transcript"]
        proc.append(subprocess.Popen(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        out, err = proc[0].communicate(timeout=60)
    assert sent, "the fake never saw the fix applied"
    assert proc[0].returncode == 130, err
    assert tree_digest(work / "copy") == pristine and _all_reverted(work / "j.jsonl")
    data = json.loads((work / "ab.json").read_text())
    assert data["complete"] is False and data["error"] == "interrupted (Ctrl-C)"
    assert "back to the baseline: 1 value(s) restored at the end, 0 failed" in out


def test_a_server_that_stops_answering_stops_the_session_and_rolls_back(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def answered(*_: object) -> None:  # it answered the check before the load, then stopped
        return None

    monkeypatch.setattr("rigaudit.orchestrator.bench.ab.reach", answered)
    with speed_server(work / "copy") as server:
        url = server.base_url
    assert _ab(work, url, "vm.swappiness", "--yes") == 1
    assert "every request of cycle 1 (baseline) failed" in capsys.readouterr().out
    assert value(work / "copy", SWAPPINESS) == "60"


def test_without_approval_nothing_is_copied_changed_or_sent(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with speed_server(work / "copy") as server:
        assert _ab(work, server.base_url, "vm.swappiness") == 3
        assert server.seen == []
    assert "no terminal to ask for approval and no --yes" in capsys.readouterr().err
    assert not (work / "copy").exists() and not (work / "j.jsonl").exists()


@pytest.mark.parametrize(
    ("only", "extra", "text"),
    [
        ("", (), "bench ab needs --only STEP"),
        ("nope", (), "no such step: nope"),
        ("reboot.step", (), "reboot.step cannot be switched on this host (deferred"),
        ("vm.swappiness", ("--cycles", "1"), "--cycles wants 2 to 100"),
        ("vm.swappiness", ("--settle", "-1"), "--settle 0 to 1000"),
        ("vm.swappiness", ("--confidence", "7"), "--confidence is a fraction"),
        ("vm.swappiness,vm.swappiness", (), "--only names a step twice"),
    ],
)
def test_usage_errors_are_one_line_and_change_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], only: str, extra: tuple[str, ...], text: str
) -> None:
    with speed_server(work / "copy") as server:
        assert _ab(work, server.base_url, only, "--yes", *extra) == 2
        assert server.seen == []
    err = capsys.readouterr().err.strip()
    assert text in err and "\n" not in err
    assert not (work / "j.jsonl").exists()


def test_a_step_already_in_place_is_refused(work: Path) -> None:
    (work / "src" / "files" / SWAPPINESS.lstrip("/")).write_text("10\n")
    plan = Plan.model_validate_json((work / "plan.json").read_text())
    steps = ab_steps(plan, ["vm.swappiness"], AbOptions())
    spec = LoadSpec("http://127.0.0.1:9", "m")
    with pytest.raises(UsageError, match="already in place on ab-host: A and B would be the same"):
        run_ab(
            lambda: SnapshotHost(work / "src"),
            plan,
            steps,
            spec,
            StepApprover("h", assume_yes=True),
            work / "j.jsonl",
            AbOptions(),
        )
    assert not (work / "j.jsonl").exists()


def test_arms(tmp_path: Path) -> None:
    plan = Plan.model_validate_json(make_plan(tmp_path / "plan.json").read_text())
    one, two = plan.steps[0], plan.steps[1]
    assert [a.name for a in arms_for([one], together=False)] == ["baseline", "vm.swappiness"]
    assert [a.name for a in arms_for([one, two], together=False)] == ["baseline", "vm.swappiness", "numa.balancing", "all steps"]
    assert [a.name for a in arms_for([one, two], together=True)] == ["baseline", "all steps"]
