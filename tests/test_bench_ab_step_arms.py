"""bench ab for a plan step of kind restart: the pair of arm commands derived from the server (a systemd unit's
drop-in, a Docker container), or one line that asks for them. The drop-in commands run against a temporary root
with a fake systemctl on PATH: this machine's systemd is never touched."""

from __future__ import annotations

import json
import shlex
import stat
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.investigators.nccl import INVESTIGATOR as NCCL
from rigaudit.agents.investigators.runtime import INVESTIGATOR
from rigaudit.orchestrator.bench.restart import RestartOptions, run_restart_ab
from rigaudit.orchestrator.bench.step_arms import DerivedArms, NotDerived, Where, derive_arms
from rigaudit.orchestrator.change.approval import ScriptedConsole, StepApprover
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.plan import build_plan
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.docker_run import container_arms
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.restart import SwitchFailed, run_command
from rigaudit.tools.core.errors import NotApprovedError
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.plan import PlanStep
from rigaudit.tools.testing.restart_fake import RestartedServer
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.docker import inspect as docker_inspect
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


def _at(tmp_path: Path) -> Where:
    return Where(root=str(tmp_path / "run"), proc=str(tmp_path / "proc"))


def _derive(spec: object, step: PlanStep, tmp_path: Path) -> DerivedArms:
    return anyio.run(lambda: derive_arms(SnapshotHost(snapshot(spec)), step, at=_at(tmp_path)))  # type: ignore[arg-type]


def _fake_systemctl(tmp_path: Path, state: Path, *, obeys: bool = True) -> Path:
    """A systemctl that logs its arguments; its restart starts the fake server as fix when the drop-in is there, and
    writes the environment of main process 4242 (without CUDA_LAUNCH_BLOCKING then, unless it does not obey)."""
    bin_dir, main = tmp_path / "bin", tmp_path / "proc" / "4242"
    bin_dir.mkdir()
    main.mkdir(parents=True)
    program = bin_dir / "systemctl"
    clean = "PATH=/bin\\0" if obeys else "PATH=/bin\\0CUDA_LAUNCH_BLOCKING=1\\0"
    program.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/systemctl.log\n'
        '[ "$1" = show ] && echo 4242\n'
        '[ "$1" = restart ] || exit 0\n'
        f"if [ -f {tmp_path}/run/$2.d/50-rigaudit-ab.conf ]; then\n"
        f"  echo fix >> {state}; printf '{clean}' > {main}/environ\n"
        f"else\n  echo base >> {state}; printf 'PATH=/bin\\0CUDA_LAUNCH_BLOCKING=1\\0' > {main}/environ\nfi\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_a_unit_server_with_launch_blocking_gives_the_drop_in_pair(clb_step: PlanStep, tmp_path: Path) -> None:
    derived = _derive(CLB, clb_step, tmp_path)
    base, fix = derived.arms
    folder, proc = f"{tmp_path}/run/vllm.service.d", f"{tmp_path}/proc"
    assert fix.command == (
        f"mkdir -p {folder} && printf '%s\\n' '[Service]' UnsetEnvironment=CUDA_LAUNCH_BLOCKING > {folder}/50-rigaudit-ab.conf"
        " && systemctl daemon-reload && systemctl restart vllm.service"
        f' && {{ pid=$(systemctl show --property=MainPID --value vllm.service) && test -r {proc}/"$pid"/environ'
        f" && ! tr '\\0' '\\n' < {proc}/\"$pid\"/environ | grep -qE '^(CUDA_LAUNCH_BLOCKING)='"
        " || { echo 'vllm.service: its main process does not run with the change (UnsetEnvironment=CUDA_LAUNCH_BLOCKING)'"
        " >&2; exit 1; }; }"
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
    base, fix = _derive(CLB, clb_step, tmp_path).arms
    monkeypatch.setenv("PATH", f"{_fake_systemctl(tmp_path, tmp_path / 'state')}:/usr/bin:/bin")
    log = tmp_path / "restarts.log"
    anyio.run(lambda: run_command(fix, log=log, timeout_s=10))
    assert (tmp_path / "run" / DROPIN).read_text() == "[Service]\nUnsetEnvironment=CUDA_LAUNCH_BLOCKING\n"
    anyio.run(lambda: run_command(base, log=log, timeout_s=10))
    assert not (tmp_path / "run" / "vllm.service.d").exists()
    calls = (tmp_path / "systemctl.log").read_text().splitlines()
    reload_restart = ["daemon-reload", "restart vllm.service"]
    assert calls == [*reload_restart, "show --property=MainPID --value vllm.service", *reload_restart]
    assert (tmp_path / "state").read_text().split() == ["fix", "base"]


def test_a_fix_the_main_process_does_not_run_with_fails_saying_so(
    clb_step: PlanStep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fix = _derive(CLB, clb_step, tmp_path).arms[1]
    monkeypatch.setenv("PATH", f"{_fake_systemctl(tmp_path, tmp_path / 'state', obeys=False)}:/usr/bin:/bin")
    with pytest.raises(SwitchFailed, match=r"fix: the command exited 1 \(vllm.service: its main process does not run with"):
        anyio.run(lambda: run_command(fix, log=tmp_path / "log", timeout_s=10))


def test_a_session_of_derived_arms_restarts_both_ways_and_leaves_no_drop_in(
    clb_step: PlanStep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.write_text("base\n")
    derived = _derive(CLB, clb_step, tmp_path)
    monkeypatch.setenv("PATH", f"{_fake_systemctl(tmp_path, state)}:/usr/bin:/bin")
    server = RestartedServer(state, {"base": 0.010, "fix": 0.005}, session_cv=0.01, request_cv=0.01)
    options = RestartOptions(cycles=3, steps=("runtime.env",), about=derived.about)
    approver = StepApprover("", assume_yes=True)
    outcome = run_restart_ab(derived.arms, SPEC, approver, tmp_path / "j.jsonl", options, Settings(), load=server.load())
    assert outcome.result.complete and outcome.result.restored == "base" and outcome.result.steps == ["runtime.env"]
    assert sorted(server.lines()[1:-1]) == ["base"] * 3 + ["fix"] * 3
    assert server.lines()[-1] == "base" and not (tmp_path / "run" / "vllm.service.d").exists()


def test_a_drop_in_left_in_place_is_refused(clb_step: PlanStep, tmp_path: Path) -> None:
    (tmp_path / "run" / "vllm.service.d").mkdir(parents=True)
    (tmp_path / "run" / DROPIN).write_text("[Service]\n")
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
    derived = _derive(CLB, clb_step, tmp_path)
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


DOCKER_CLB = faults.server_env(ARCHETYPES["docker-host-h100"], CUDA_LAUNCH_BLOCKING="1")


def _fake_docker(tmp_path: Path) -> Path:
    """A docker that writes each call's arguments, one per line, to calls/N."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "calls").mkdir()
    program = bin_dir / "docker"
    program.write_text(f'#!/bin/sh\nn=$(ls {tmp_path}/calls | wc -l)\nprintf "%s\\n" "$@" > {tmp_path}/calls/$n\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_a_docker_server_gives_a_pair_that_restarts_it_or_runs_a_changed_copy(
    clb_step: PlanStep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    derived = _derive(DOCKER_CLB, clb_step, tmp_path)
    base, fix = derived.arms
    assert base.command == "{ docker rm -f vllm-rigaudit-ab >/dev/null 2>&1 || true; } && docker restart vllm"
    assert fix.command.startswith("docker stop vllm && { docker rm -f vllm-rigaudit-ab >/dev/null 2>&1 || true; } && ")
    assert any("Docker container vllm (image vllm/vllm-openai:v0.6.3" in line for line in derived.about)
    monkeypatch.setenv("PATH", f"{_fake_docker(tmp_path)}:/usr/bin:/bin")
    anyio.run(lambda: run_command(fix, log=tmp_path / "log", timeout_s=10))
    calls = [(tmp_path / "calls" / str(n)).read_text().splitlines() for n in range(3)]
    assert calls[:2] == [["stop", "vllm"], ["rm", "-f", "vllm-rigaudit-ab"]]
    run = calls[2]
    assert run[:6] == ["run", "-d", "--name", "vllm-rigaudit-ab", "--entrypoint", "/usr/bin/python3"]
    assert run[run.index("--gpus") : run.index("--gpus") + 2] == ["--gpus", "all"] and "--ipc=host" in run
    assert not any("CUDA_LAUNCH_BLOCKING" in word for word in run) and "HOME=/root" in run
    image = run.index("sha256:7d3c1b2a9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b")
    assert run[image + 1 :] == ["-m", "vllm.entrypoints.openai.api_server", *DOCKER_CLB.processes[0].argv[3:]]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"labels": (("com.docker.compose.project", "llm"),)}, "is managed by Docker Compose (project llm)"),
        ({"env": (*DOCKER_CLB.processes[0].env, ("HF_TOKEN", "hf_x"))}, "holds HF_TOKEN, which rigaudit does not put on"),
    ],
)
def test_a_container_a_copy_cannot_stand_for_asks_for_the_commands(
    clb_step: PlanStep, tmp_path: Path, change: dict[str, object], said: str
) -> None:
    processes = tuple(replace(p, **change) for p in DOCKER_CLB.processes)  # type: ignore[arg-type]
    spec = replace(DOCKER_CLB, name=f"{DOCKER_CLB.name}+{said[:8]}", processes=processes)
    with pytest.raises(NotDerived) as caught:
        _derive(spec, clb_step, tmp_path)
    assert said in str(caught.value) and "--arm base=" in str(caught.value) and "\n" not in str(caught.value)


def test_gpus_by_id_and_a_raised_open_file_limit_are_carried_as_docker_parses_them() -> None:
    (info,) = docker_inspect("5e8a2b9c7d1f", DOCKER_CLB.processes[0])
    info["HostConfig"]["DeviceRequests"][0]["DeviceIDs"] = ["0", "1"]  # type: ignore[index]
    arms = container_arms(info, nofile=1048576)
    assert not isinstance(arms, str)
    words = shlex.split(arms[1].command.rsplit(" && ", 1)[1])
    assert words[words.index("--gpus") + 1] == '"device=0,1"'
    assert [w for w in words if w.startswith("nofile=")] == ["nofile=1048576:1048576"]
    assert "CUDA_LAUNCH_BLOCKING=1" in words  # only what the change names is dropped


def _plan_file(tmp_path: Path, *steps: PlanStep) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"steps": [s.model_dump(mode="json") for s in steps]}))
    return path


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--only", "runtime.env,numa.balancing"], "runtime.env needs a server restart: measure it alone (--only runtime.env)"),
        (["--only", "runtime.env", "--snapshot", "SNAP", "--into", "COPY"], "it is measured on this machine's server, not"),
    ],
)
def test_cli_refusals_of_a_restart_step_exit_2_with_one_line(
    clb_step: PlanStep, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    runtime = clb_step.model_copy(update={"id": "numa.balancing", "check": "numa.balancing", "kind": "runtime"})
    plan = _plan_file(tmp_path, clb_step, runtime)
    extra = [str(snapshot(CLB)) if w == "SNAP" else str(tmp_path / "copy") if w == "COPY" else w for w in extra]
    argv = ["bench", "ab", "--plan", str(plan), *extra, "--base-url", "http://127.0.0.1:9", "--model", "m"]
    assert main([*argv, "--yes", "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err
    assert not (tmp_path / "copy").exists()


def test_a_low_open_file_limit_gives_a_limit_drop_in_checked_in_the_main_process(tmp_path: Path) -> None:
    low = replace(HGX, name=HGX.name + "+nofile", processes=tuple(replace(p, nofile=(1024, 4096)) for p in HGX.processes))
    plan, _ = build_plan(audit_snapshot(INVESTIGATOR, snapshot(low)).values())
    step = plan.step("runtime.nofile")
    assert step is not None and step.kind == "restart"
    fix = _derive(low, step, tmp_path).arms[1].command
    assert "printf '%s\\n' '[Service]' LimitNOFILE=1048576 > " in fix
    assert f"grep -qE '^Max open files +1048576 ' {tmp_path}/proc/\"$pid\"/limits" in fix


def test_an_nccl_override_in_the_servers_environment_is_unset_by_the_drop_in(tmp_path: Path) -> None:
    spec = faults.server_env(HGX, NCCL_P2P_DISABLE="1")
    plan, _ = build_plan(audit_snapshot(NCCL, snapshot(spec)).values())
    step = plan.step("nccl.env")
    assert step is not None and step.kind == "restart"
    derived = _derive(spec, step, tmp_path)
    assert "'[Service]' UnsetEnvironment=NCCL_P2P_DISABLE > " in derived.arms[1].command
    assert derived.about[0].startswith("nccl.env: pid 3120 (vllm) runs under the systemd unit vllm.service")
