"""bench ab for a plan step of kind restart: the pair of arm commands derived from the server (a systemd unit's
drop-in, a Docker container), or one line that asks for them. The drop-in commands run against a temporary root
with a fake systemctl on PATH: this machine's systemd is never touched."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.investigators.runtime import INVESTIGATOR
from rigaudit.orchestrator.bench.restart import RestartOptions, run_restart_ab
from rigaudit.orchestrator.bench.step_arms import DerivedArms, NotDerived, derive_arms
from rigaudit.orchestrator.change.approval import ScriptedConsole, StepApprover
from rigaudit.orchestrator.plan import build_plan
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.restart import run_command
from rigaudit.tools.core.errors import NotApprovedError
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.model.plan import PlanStep
from rigaudit.tools.testing.restart_fake import RestartedServer
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot

HGX = ARCHETYPES["hgx-h100-jammy"]
CLB = faults.server_env(HGX, CUDA_LAUNCH_BLOCKING="1")
DROPIN = "vllm.service.d/50-rigaudit-ab.conf"
SPEC = LoadSpec(base_url="http://127.0.0.1:9", model="m", concurrency=(1,), requests=3, max_tokens=8, warmup=1)


@pytest.fixture(scope="module")
def clb_step() -> PlanStep:
    """The runtime.env step rigaudit's own rules plan for the generated host."""
    plan, _ = build_plan(audit_snapshot(INVESTIGATOR, snapshot(CLB)).values())
    step = plan.step("runtime.env")
    assert step is not None and step.kind == "restart"
    return step


def _derive(spec: object, step: PlanStep, root: Path) -> DerivedArms:
    return anyio.run(lambda: derive_arms(SnapshotHost(snapshot(spec)), step, root=str(root)))  # type: ignore[arg-type]


def _fake_systemctl(tmp_path: Path, root: Path, state: Path) -> Path:
    """A systemctl that logs its arguments and, on restart, starts the fake server as fix when the drop-in is there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "systemctl"
    program.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/systemctl.log\n'
        f'[ "$1" = restart ] || exit 0\n'
        f"if [ -f {root}/$2.d/50-rigaudit-ab.conf ]; then echo fix; else echo base; fi >> {state}\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_a_unit_server_with_launch_blocking_gives_the_drop_in_pair(clb_step: PlanStep, tmp_path: Path) -> None:
    root = tmp_path / "run"
    derived = _derive(CLB, clb_step, root)
    base, fix = derived.arms
    folder = f"{root}/vllm.service.d"
    assert fix.command == (
        f"mkdir -p {folder} && printf '%s\\n' '[Service]' UnsetEnvironment=CUDA_LAUNCH_BLOCKING > {folder}/50-rigaudit-ab.conf"
        " && systemctl daemon-reload && systemctl restart vllm.service"
    )
    assert base.command == (
        f"rm -f {folder}/50-rigaudit-ab.conf && {{ rmdir {folder} 2>/dev/null || true; }}"
        " && systemctl daemon-reload && systemctl restart vllm.service"
    )
    assert (base.name, fix.name) == ("base", "fix")
    assert any("vllm.service" in line and "confirmed by systemctl show" in line for line in derived.about)


def test_the_drop_in_commands_write_and_remove_it_under_the_given_root(
    clb_step: PlanStep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "run"
    base, fix = _derive(CLB, clb_step, root).arms
    monkeypatch.setenv("PATH", f"{_fake_systemctl(tmp_path, root, tmp_path / 'state')}:/usr/bin:/bin")
    log = tmp_path / "restarts.log"
    anyio.run(lambda: run_command(fix, log=log, timeout_s=10))
    assert (root / DROPIN).read_text() == "[Service]\nUnsetEnvironment=CUDA_LAUNCH_BLOCKING\n"
    anyio.run(lambda: run_command(base, log=log, timeout_s=10))
    assert not (root / "vllm.service.d").exists()
    calls = (tmp_path / "systemctl.log").read_text().splitlines()
    assert calls == ["daemon-reload", "restart vllm.service"] * 2
    assert (tmp_path / "state").read_text().split() == ["fix", "base"]


def test_a_session_of_derived_arms_restarts_both_ways_and_leaves_no_drop_in(
    clb_step: PlanStep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state = tmp_path / "run", tmp_path / "state"
    state.write_text("base\n")
    derived = _derive(CLB, clb_step, root)
    monkeypatch.setenv("PATH", f"{_fake_systemctl(tmp_path, root, state)}:/usr/bin:/bin")
    server = RestartedServer(state, {"base": 0.010, "fix": 0.005}, session_cv=0.01, request_cv=0.01)
    options = RestartOptions(cycles=3, steps=("runtime.env",), about=derived.about)
    approver = StepApprover("", assume_yes=True)
    outcome = run_restart_ab(derived.arms, SPEC, approver, tmp_path / "j.jsonl", options, Settings(), load=server.load())
    assert outcome.result.complete and outcome.result.restored == "base" and outcome.result.steps == ["runtime.env"]
    assert sorted(server.lines()[1:-1]) == ["base"] * 3 + ["fix"] * 3
    assert server.lines()[-1] == "base" and not (root / "vllm.service.d").exists()


def test_a_drop_in_left_in_place_is_refused(clb_step: PlanStep, tmp_path: Path) -> None:
    (tmp_path / "vllm.service.d").mkdir()
    (tmp_path / DROPIN).write_text("[Service]\n")
    with pytest.raises(NotDerived, match="is in place already"):
        _derive(CLB, clb_step, tmp_path)


def test_a_server_under_neither_a_unit_nor_a_container_asks_for_the_commands(clb_step: PlanStep, tmp_path: Path) -> None:
    session = "0::/user.slice/user-0.slice/session-3.scope\n"
    shell = replace(CLB, processes=tuple(replace(p, cgroup=session) for p in CLB.processes))
    with pytest.raises(NotDerived) as caught:
        _derive(replace(shell, name=shell.name + "+session"), clb_step, tmp_path)
    said = str(caught.value)
    assert "runs under neither a systemd service nor a Docker container" in said and "--arm base=" in said
    assert "\n" not in said


def test_a_step_whose_problem_is_gone_derives_nothing(clb_step: PlanStep, tmp_path: Path) -> None:
    with pytest.raises(NotDerived, match="no debug variable is left in its environment"):
        _derive(HGX, clb_step.model_copy(update={"subjects": ()}), tmp_path)


def test_the_approval_shows_the_derived_commands(clb_step: PlanStep, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("base\n")
    derived = _derive(CLB, clb_step, tmp_path / "run")
    server = RestartedServer(state, {"base": 0.010, "fix": 0.010})
    console = ScriptedConsole(["details", "no"])
    approver = StepApprover("", assume_yes=False, interactive=True, console=console)
    options = RestartOptions(cycles=2, steps=("runtime.env",), about=derived.about)
    with pytest.raises(NotApprovedError):
        run_restart_ab(derived.arms, SPEC, approver, tmp_path / "j", options, Settings(), load=server.load())
    shown = "\n".join(console.shown)
    assert f"fix: {derived.arms[1].command}" in shown and f"base: {derived.arms[0].command}" in shown
    assert "interleaved A/B of runtime.env" in shown and "runs under the systemd unit vllm.service" in shown
    assert server.lines() == ["base"] and not (tmp_path / "j").exists()
