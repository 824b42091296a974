"""SandboxedShell: vetted before anything runs, argv only, ask needs an approver, output capped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import anyio

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, NvmlResult
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.policy import Verdict
from rigaudit.tools.policy.shell import SandboxedShell, ShellOutcome, cap_text


class FakeHost:
    """Records every argv it is asked to run and answers with canned output."""

    name = "fake"
    source = "fake"

    def __init__(self, stdout: str = "ok\n", stderr: str = "") -> None:
        self.runs: list[tuple[tuple[str, ...], float]] = []
        self.stdout = stdout
        self.stderr = stderr

    async def read(self, path: str) -> FileResult:
        return FileResult(path, None, "ENOENT")

    async def list_dir(self, path: str) -> DirResult:
        return DirResult(path, None, "ENOENT")

    async def readlink(self, path: str) -> str | None:
        return None

    async def exists(self, path: str) -> bool:
        return False

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        self.runs.append((tuple(argv), timeout_s))
        return CommandResult(tuple(argv), exit_code=0, stdout=self.stdout, stderr=self.stderr, duration_s=0.01)

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        return NvmlResult(fn, args, error="NOT_SUPPORTED")

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        raise AssertionError("the shell never writes")

    async def aclose(self) -> None:
        return None


def _execute(shell: SandboxedShell, command: str) -> ShellOutcome:
    async def go() -> ShellOutcome:
        return await shell.execute(command)

    return anyio.run(go)


def test_allowed_command_runs_as_argv_with_the_timeout() -> None:
    host = FakeHost()
    outcome = _execute(SandboxedShell(host, timeout_s=3.5), "nvidia-smi --query-gpu=name --format=csv")
    assert outcome.ran and outcome.verdict.decision == "allow"
    assert host.runs == [(("nvidia-smi", "--query-gpu=name", "--format=csv"), 3.5)]
    assert outcome.for_model().startswith("$ nvidia-smi --query-gpu=name --format=csv  (exit status 0")


def test_denied_command_never_reaches_the_host() -> None:
    host = FakeHost()
    for command in ("nvidia-smi -r", "dmesg | tail", "sudo reboot", "echo 1 > /proc/sys/vm/drop_caches", ""):
        outcome = _execute(SandboxedShell(host), command)
        assert not outcome.ran and outcome.verdict.decision == "deny", command
        assert outcome.for_model().startswith("not run: deny (")
    assert host.runs == []


def test_ask_without_an_approver_is_refused() -> None:
    host = FakeHost()
    outcome = _execute(SandboxedShell(host), "cat /proc/1/environ")
    assert outcome.verdict.decision == "ask" and not outcome.ran and outcome.approved is False
    assert "needs approval" in outcome.for_model() and "no one is here" in outcome.for_model()
    assert host.runs == []


def test_ask_runs_only_when_the_approver_says_yes() -> None:
    seen: list[Verdict] = []

    async def approve(verdict: Verdict) -> bool:
        seen.append(verdict)
        return verdict.argv == ("cat", "/proc/1/environ")

    host = FakeHost()
    shell = SandboxedShell(host, ask=approve)
    yes = _execute(shell, "cat /proc/1/environ")
    no = _execute(shell, "dcgmi diag -r 3")
    assert yes.ran and yes.approved is True
    assert not no.ran and no.approved is False
    assert [v.rule for v in seen] == ["process-environ", "dcgmi-diag"]
    assert host.runs == [(("cat", "/proc/1/environ"), 10.0)]


def test_a_failing_approver_is_a_refusal() -> None:
    async def broken(verdict: Verdict) -> bool:
        raise RuntimeError("no tty")

    host = FakeHost()
    outcome = _execute(SandboxedShell(host, ask=broken), "printenv")
    assert not outcome.ran and outcome.approved is False and "RuntimeError" in outcome.note
    assert host.runs == []


def test_denied_commands_are_never_offered_to_the_approver() -> None:
    async def approve_all(verdict: Verdict) -> bool:
        raise AssertionError(f"asked about {verdict}")

    host = FakeHost()
    outcome = _execute(SandboxedShell(host, ask=approve_all), "nvidia-smi -pm 1")
    assert not outcome.ran and host.runs == []


def test_output_is_capped_keeping_head_and_tail() -> None:
    body = "".join(f"line {i:05d}\n" for i in range(5000))
    host = FakeHost(stdout=body, stderr="e" * 10_000)
    outcome = _execute(SandboxedShell(host, output_cap=1000), "dmesg")
    assert outcome.result is not None
    out = outcome.result.stdout
    assert len(out) <= 1000
    assert out.startswith("line 00000") and out.endswith("line 04999\n")
    assert "characters cut" in out
    assert len(outcome.result.stderr) <= 250
    cuts = [int(n) for n in re.findall(r"\[\.\.\. (\d+) characters cut", out + outcome.result.stderr)]
    assert len(cuts) == 2 and outcome.result.truncated == sum(cuts) > len(body) - 1000


def test_cap_text_reports_what_it_cut() -> None:
    assert cap_text("short", 100) == ("short", 0)
    text, cut = cap_text("a" * 300 + "b" * 300, 200)
    assert len(text) <= 200 and text.startswith("a") and text.endswith("b")
    assert f"[... {cut} characters cut ...]" in text
    assert cut == 600 - (len(text) - len(f"\n[... {cut} characters cut ...]\n"))


def test_custom_policy_is_used() -> None:
    host = FakeHost()
    shell = SandboxedShell(host, policy=lambda line: Verdict("deny", "everything is denied here", ("uname",)))
    assert not _execute(shell, "uname").ran and host.runs == []


def test_runs_against_a_snapshot_host(seed_dir: Path) -> None:
    shell = SandboxedShell(SnapshotHost(seed_dir))
    outcome = _execute(shell, "uname -r")
    assert outcome.result is not None and outcome.result.stdout == "6.8.12-11-pve\n"
