"""apply: approval, journal before change, verify, revert at once, independence of steps (library level)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.change.apply import ApplyOptions, ApplyReport, apply_plan
from rigaudit.orchestrator.change.approval import ScriptedConsole, StepApprover
from rigaudit.tools.actions.journal import Journal, read_journal
from rigaudit.tools.actions.rollback import rollback
from rigaudit.tools.core.errors import NotApprovedError
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.apply import ApprovalDecided, ChangeApplied
from rigaudit.tools.schema.events.union import Event
from rigaudit.tools.schema.finding import ModuleLoadAction, ServiceStartAction, SysctlAction, SysfsWriteAction
from rigaudit.tools.schema.plan import Plan, PlanStep
from tests.support.apply import CPUIDLE, DEVCTL, GPUS, NUMA, MemoryHost, devctl, fast_tmp, mini_seed, read, seed_plan, tree_digest


@pytest.fixture
def ram(tmp_path: Path) -> Iterator[Path]:
    yield from fast_tmp(tmp_path)


def _apply(
    host: Host, plan: Plan, journal: Path, approver: StepApprover, events: list[Event] | None = None, **options: object
) -> ApplyReport:
    sink = events if events is not None else []
    opts = ApplyOptions(**options)  # type: ignore[arg-type]

    async def main() -> ApplyReport:
        return await apply_plan(host, plan, approver=approver, journal_path=journal, options=opts, emit=sink.append)

    return anyio.run(main)


def _yes(plan: Plan, events: list[Event] | None = None) -> StepApprover:
    emit = events.append if events is not None else None
    return StepApprover(plan.digest(), assume_yes=True, interactive=False, who="test@here", emit=emit)


def _status(report: ApplyReport) -> dict[str, str]:
    return {s.step.id: s.status for s in report.steps}


def test_runtime_steps_change_the_copy_and_the_rest_is_listed(ram: Path) -> None:
    root = mini_seed(ram / "copy")
    plan = seed_plan()
    events: list[Event] = []
    report = _apply(SnapshotHost(root, writable=True), plan, ram / "j.jsonl", _yes(plan, events), events)
    assert _status(report) == {
        "numa.balancing": "applied",
        "power.cstates": "applied",
        "pcie.mrrs": "applied",
        "power.scaling_driver": "deferred",
        "pcie.acs": "elsewhere",
    }
    assert read(root, NUMA) == b"0\n"
    assert {read(root, p) for p in CPUIDLE} == {b"1\n"}
    assert {devctl(root, gpu) for gpu in GPUS} == {0x583F}
    changes = [e for e in events if isinstance(e, ChangeApplied)]
    assert len(changes) == 1 + 128 + 8 and all(c.verified for c in changes)
    assert [e.step_id for e in events if isinstance(e, ApprovalDecided)] == ["numa.balancing", "power.cstates", "pcie.mrrs"]


def test_every_change_is_journaled_before_it_is_made(ram: Path) -> None:
    root = mini_seed(ram / "copy")
    plan = seed_plan()
    _apply(SnapshotHost(root, writable=True), plan, ram / "j.jsonl", _yes(plan))
    entries, warnings = read_journal(ram / "j.jsonl")
    assert warnings == []
    assert entries[0].kind == "session" and entries[0].plan_hash == plan.digest()
    planned = [e for e in entries if e.state == "planned"]
    outcomes = {e.ref: e for e in entries if e.kind == "change" and e.ref is not None}
    assert len(planned) == 137
    for entry in planned:
        outcome = outcomes[entry.seq]
        assert outcome.state == "verified" and outcome.seq > entry.seq
        assert entry.revert
    numa = next(e for e in planned if e.step_id == "numa.balancing")
    assert (numa.before, numa.after, numa.revert) == ("1\n", "0\n", "sysctl -w kernel.numa_balancing=1")
    mrrs = [e for e in planned if e.step_id == "pcie.mrrs"]
    assert {e.before for e in mrrs} == {"0x283f"}
    assert mrrs[0].revert == f"setpci -s {GPUS[0]} CAP_EXP+0x8.w=2000:7000"
    approvals = [e.approval for e in entries if e.kind == "approval"]
    assert [(a.step_id, a.decision, a.plan_hash) for a in approvals if a] == [
        ("numa.balancing", "auto", plan.digest()),
        ("power.cstates", "auto", plan.digest()),
        ("pcie.mrrs", "auto", plan.digest()),
    ]
    # Every step's planned entries come before its first outcome: nothing changed un-journaled.
    for step in ("power.cstates", "pcie.mrrs"):
        seqs = [e.seq for e in entries if e.step_id == step and e.state == "planned"]
        first_outcome = min(e.seq for e in entries if e.step_id == step and e.ref is not None)
        assert max(seqs) < first_outcome


def test_pci_write_changes_only_the_bits_under_the_mask(ram: Path) -> None:
    root = mini_seed(ram / "copy")
    before = read(root, f"/sys/bus/pci/devices/{GPUS[0]}/config")
    plan = seed_plan()
    _apply(SnapshotHost(root, writable=True), plan, ram / "j.jsonl", _yes(plan), only=["pcie.mrrs"])
    after = read(root, f"/sys/bus/pci/devices/{GPUS[0]}/config")
    assert len(after) == len(before) == 4096
    changed = [i for i in range(len(before)) if before[i] != after[i]]
    assert changed == [DEVCTL + 1]  # 0x283f -> 0x583f: only the high byte, only bits 14:12
    assert (after[DEVCTL + 1] ^ before[DEVCTL + 1]) & ~0x70 == 0
    assert read(root, NUMA) == b"1\n"  # --only kept the other steps out


def _memory_host(**kwargs: object) -> MemoryHost:
    files = {NUMA: b"1\n", **{p: b"0\n" for p in CPUIDLE[:4]}}
    return MemoryHost(files, **kwargs)  # type: ignore[arg-type]


def _small_plan(*extra: PlanStep) -> Plan:
    return Plan(
        steps=(
            PlanStep(
                id="power.cstates",
                check="power.cstates",
                priority="P0",
                kind="runtime",
                where="host",
                title="C2 off",
                actions=(SysfsWriteAction(paths=CPUIDLE[:4], value="1"),),
            ),
            PlanStep(
                id="numa.balancing",
                check="numa.balancing",
                priority="P0",
                kind="runtime",
                where="host",
                title="numa off",
                actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
            ),
            *extra,
        )
    )


def test_a_change_that_does_not_verify_is_reverted_at_once_and_the_rest_goes_on(ram: Path) -> None:
    host = _memory_host(mangle={CPUIDLE[1]: b"2\n"})
    plan = _small_plan()
    report = _apply(host, plan, ram / "j.jsonl", _yes(plan))
    cstates = report.steps[0]
    assert cstates.status == "partial"
    bad = next(r for r in cstates.results if r.target.describe() == CPUIDLE[1])
    assert bad.outcome == "reverted"
    assert "did not verify (read 2, wanted 1); reverted at once" in bad.message
    assert host.files[CPUIDLE[1]] == b"0\n"  # back to its value before
    assert host.writes.count(CPUIDLE[1]) == 2  # the change, then the revert
    assert [host.files[p] for p in (CPUIDLE[0], CPUIDLE[2], CPUIDLE[3])] == [b"1\n"] * 3
    assert report.steps[1].status == "applied" and host.files[NUMA] == b"0\n"
    entries, _ = read_journal(ram / "j.jsonl")
    assert [e.state for e in entries if e.ref is not None and e.target and e.target.describe() == CPUIDLE[1]] == ["reverted"]
    assert report.problems == [bad]


def test_a_refused_write_fails_that_target_only(ram: Path) -> None:
    host = _memory_host(refuse=[NUMA])
    plan = _small_plan()
    report = _apply(host, plan, ram / "j.jsonl", _yes(plan))
    assert _status(report) == {"power.cstates": "applied", "numa.balancing": "failed"}
    failure = report.steps[1].results[0]
    assert failure.outcome == "failed" and "EPERM" in failure.message
    assert host.files[NUMA] == b"1\n"


def test_modules_and_services_are_changed_by_command_and_rolled_back(ram: Path) -> None:
    host = _memory_host()
    plan = _small_plan(
        PlanStep(
            id="driver.peermem",
            check="driver.peermem",
            priority="P1",
            kind="runtime",
            where="host",
            title="peermem",
            actions=(ModuleLoadAction(module="nvidia-peermem"),),
        ),
        PlanStep(
            id="driver.persistence",
            check="driver.persistence",
            priority="P1",
            kind="runtime",
            where="host",
            title="pd",
            actions=(ServiceStartAction(unit="nvidia-persistenced"),),
        ),
    )
    report = _apply(host, plan, ram / "j.jsonl", _yes(plan))
    assert _status(report)["driver.peermem"] == "applied" and _status(report)["driver.persistence"] == "applied"
    assert ("modprobe", "nvidia-peermem") in host.commands and ("systemctl", "start", "nvidia-persistenced") in host.commands
    entries, _ = read_journal(ram / "j.jsonl")

    async def undo() -> None:
        with Journal.reopen(ram / "j.jsonl") as journal:
            await rollback(host, entries, journal)

    anyio.run(undo)
    assert ("modprobe", "-r", "nvidia-peermem") in host.commands
    assert ("systemctl", "stop", "nvidia-persistenced") in host.commands
    assert host.files[NUMA] == b"1\n" and host.modules == set() and host.active == set()


def test_quit_stops_at_once_and_later_steps_are_not_attempted(ram: Path) -> None:
    host = _memory_host()
    plan = _small_plan()
    console = ScriptedConsole(["quit"])
    approver = StepApprover(plan.digest(), assume_yes=False, interactive=True, console=console, who="t@h")
    report = _apply(host, plan, ram / "j.jsonl", approver)
    assert _status(report) == {"power.cstates": "not_attempted", "numa.balancing": "not_attempted"}
    assert report.quit and host.writes == []
    console.assert_complete()


def test_no_skips_one_step_and_asks_about_the_next(ram: Path) -> None:
    host = _memory_host()
    plan = _small_plan()
    console = ScriptedConsole(["no", "yes"])
    approver = StepApprover(plan.digest(), assume_yes=False, interactive=True, console=console, who="t@h")
    report = _apply(host, plan, ram / "j.jsonl", approver)
    assert _status(report) == {"power.cstates": "declined", "numa.balancing": "applied"}
    assert host.files[CPUIDLE[0]] == b"0\n" and host.files[NUMA] == b"0\n"
    assert "1 -> 1" not in console.shown[0] and "4 files" in console.shown[0] and "0 -> 1" in console.shown[0]
    decisions = [e.approval.decision for e in read_journal(ram / "j.jsonl")[0] if e.approval]
    assert decisions == ["no", "yes"]


def test_without_a_terminal_or_yes_nothing_changes_and_no_journal_is_left(ram: Path) -> None:
    host = _memory_host()
    plan = _small_plan()
    approver = StepApprover(plan.digest(), assume_yes=False, interactive=False)
    with pytest.raises(NotApprovedError, match="no terminal"):
        _apply(host, plan, ram / "j.jsonl", approver)
    assert host.writes == [] and not (ram / "j.jsonl").exists()


def test_steps_already_in_place_are_not_asked_about(ram: Path) -> None:
    host = _memory_host()
    plan = _small_plan()
    _apply(host, plan, ram / "j1.jsonl", _yes(plan))
    console = ScriptedConsole([])
    approver = StepApprover(plan.digest(), assume_yes=False, interactive=True, console=console)
    report = _apply(host, plan, ram / "j2.jsonl", approver)
    assert _status(report) == {"power.cstates": "unchanged", "numa.balancing": "unchanged"}
    assert console.asked == []


def test_container_steps_run_only_inside_the_container(ram: Path) -> None:
    step = PlanStep(
        id="container.x",
        check="container.x",
        priority="P1",
        kind="runtime",
        where="container",
        title="x",
        actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
    )
    plan = Plan(steps=(step,))
    outside = _apply(_memory_host(), plan, ram / "a.jsonl", _yes(plan))
    inside = _apply(_memory_host(), plan, ram / "b.jsonl", _yes(plan), in_container=True)
    assert _status(outside) == {"container.x": "elsewhere"} and _status(inside) == {"container.x": "applied"}


def test_persist_writes_config_files_and_rollback_removes_them(ram: Path) -> None:
    root = mini_seed(ram / "copy")
    plan = seed_plan()
    report = _apply(SnapshotHost(root, writable=True), plan, ram / "j.jsonl", _yes(plan), persist=True)
    written = {r.target.describe(): r for r in report.persist}
    assert set(written) == {
        "/etc/sysctl.d/90-rigaudit.conf",
        "/etc/tmpfiles.d/rigaudit.conf",
        "/etc/udev/rules.d/90-rigaudit.rules",
    }
    assert all(r.outcome == "verified" and r.before is None for r in written.values())
    sysctl = read(root, "/etc/sysctl.d/90-rigaudit.conf").decode()
    assert "kernel.numa_balancing = 0\n" in sysctl and sysctl.startswith("# Written by `rigaudit apply --persist`")
    tmpfiles = read(root, "/etc/tmpfiles.d/rigaudit.conf").decode()
    assert f"w {CPUIDLE[127]} - - - - 1\n" in tmpfiles
    udev = read(root, "/etc/udev/rules.d/90-rigaudit.rules").decode()
    assert f'KERNEL=="{GPUS[7]}", RUN+="/bin/sh -c \'setpci -s {GPUS[7]} CAP_EXP+0x8.w=5000:7000\'"' in udev
    entries, _ = read_journal(ram / "j.jsonl")
    assert [e.approval.step_id for e in entries if e.approval][-1] == "persist"

    async def undo() -> None:
        with Journal.reopen(ram / "j.jsonl") as journal:
            await rollback(SnapshotHost(root, writable=True), entries, journal)

    anyio.run(undo)
    assert not (root / "files" / "etc" / "sysctl.d").exists()
    assert not (root / "files" / "etc" / "udev").exists()
    assert (root / "files" / "etc" / "hostname").exists()
    assert read(root, NUMA) == b"1\n"


def test_persist_keeps_existing_lines_and_restores_the_old_file(ram: Path) -> None:
    old = b"# mine\nvm.swappiness = 10\n"
    host = MemoryHost({NUMA: b"1\n", "/etc/sysctl.d/90-rigaudit.conf": old})
    plan = Plan(steps=(_small_plan().steps[1],))
    report = _apply(host, plan, ram / "j.jsonl", _yes(plan), persist=True)
    assert host.files["/etc/sysctl.d/90-rigaudit.conf"] == old + b"kernel.numa_balancing = 0\n"
    assert report.persist[0].before == old.decode()
    entries, _ = read_journal(ram / "j.jsonl")

    async def undo() -> None:
        await rollback(host, entries, None)

    anyio.run(undo)
    assert host.files["/etc/sysctl.d/90-rigaudit.conf"] == old


def test_persist_creates_missing_files_with_install_on_other_hosts(ram: Path) -> None:
    host = MemoryHost({NUMA: b"1\n"})
    plan = Plan(steps=(_small_plan().steps[1],))
    _apply(host, plan, ram / "j.jsonl", _yes(plan), persist=True)
    assert ("install", "-D", "-m", "0644", "/dev/null", "/etc/sysctl.d/90-rigaudit.conf") in host.commands
    assert host.files["/etc/sysctl.d/90-rigaudit.conf"].endswith(b"kernel.numa_balancing = 0\n")

    async def undo() -> None:
        await rollback(host, read_journal(ram / "j.jsonl")[0], None)

    anyio.run(undo)
    assert "/etc/sysctl.d/90-rigaudit.conf" not in host.files
    assert ("rm", "-f", "--", "/etc/sysctl.d/90-rigaudit.conf") in host.commands


def test_a_writable_snapshot_creates_and_removes_files_under_etc_only(ram: Path) -> None:
    from rigaudit.tools.hosts.base import HostWriteError

    root = mini_seed(ram / "copy")
    host = SnapshotHost(root, writable=True)
    anyio.run(host.write, "/etc/sysctl.d/90-rigaudit.conf", b"kernel.numa_balancing = 0\n")
    assert read(root, "/etc/sysctl.d/90-rigaudit.conf") == b"kernel.numa_balancing = 0\n"
    with pytest.raises(HostWriteError, match="no such file"):
        anyio.run(host.write, "/proc/sys/kernel/no_such_knob", b"1\n")
    with pytest.raises(HostWriteError, match="no such file"):
        anyio.run(lambda: host.write("/etc/new.conf", b"x", offset=4))
    with pytest.raises(HostWriteError, match="only files under /etc"):
        anyio.run(host.remove, NUMA)
    with pytest.raises(HostWriteError, match="read-only"):
        anyio.run(SnapshotHost(root).remove, "/etc/sysctl.d/90-rigaudit.conf")
    anyio.run(host.remove, "/etc/sysctl.d/90-rigaudit.conf")
    assert not (root / "files" / "etc" / "sysctl.d").exists()
    assert (root / "files" / "etc" / "hostname").is_file()


def test_persist_is_approved_separately(ram: Path) -> None:
    host = MemoryHost({NUMA: b"1\n"})
    plan = Plan(steps=(_small_plan().steps[1],))
    console = ScriptedConsole(["yes", "no"])
    approver = StepApprover(plan.digest(), assume_yes=False, interactive=True, console=console, who="t@h")
    report = _apply(host, plan, ram / "j.jsonl", approver, persist=True)
    assert console.asked == ["Apply numa.balancing?", "Write these files so the changes survive a reboot?"]
    assert "/etc/sysctl.d/90-rigaudit.conf: absent -> 2 lines" in console.shown[-1]
    assert host.files[NUMA] == b"0\n" and "/etc/sysctl.d/90-rigaudit.conf" not in host.files
    assert report.persist == [] and report.persist_notes == ["persist declined"]


class _ChoiceHost(MemoryHost):
    """A kernel choice file: reads ``always [madvise] never``, takes one word, refuses anything else."""

    PATH = "/sys/kernel/mm/transparent_hugepage/enabled"

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        if path != self.PATH:
            return await super().write(path, data, offset=offset)
        from rigaudit.tools.hosts.base import HostWriteError

        self.writes.append(path)
        word = data.decode().strip()
        if word not in ("always", "madvise", "never"):
            raise HostWriteError(f"{path}: EINVAL (Invalid argument)")
        self.files[path] = " ".join(f"[{w}]" if w == word else w for w in ("always", "madvise", "never")).encode() + b"\n"
        return None


def test_choice_files_verify_by_their_selection_and_restore_by_word(ram: Path) -> None:
    host = _ChoiceHost({_ChoiceHost.PATH: b"[always] madvise never\n"})
    step = PlanStep(
        id="kernel.thp",
        check="kernel.thp",
        priority="P1",
        kind="runtime",
        where="host",
        title="THP madvise",
        actions=(SysfsWriteAction(paths=(_ChoiceHost.PATH,), value="madvise"),),
    )
    plan = Plan(steps=(step,))
    report = _apply(host, plan, ram / "j.jsonl", _yes(plan))
    assert report.steps[0].status == "applied"
    assert host.files[_ChoiceHost.PATH] == b"always [madvise] never\n"
    results = anyio.run(rollback, host, read_journal(ram / "j.jsonl")[0], None)
    assert [r.outcome for r in results] == ["restored"]
    assert host.files[_ChoiceHost.PATH] == b"[always] madvise never\n"


def test_mini_seed_holds_the_known_values(ram: Path) -> None:
    root = mini_seed(ram / "mini")
    assert read(root, NUMA) == b"1\n"
    assert {read(root, p) for p in CPUIDLE} == {b"0\n"}
    assert {devctl(root, gpu) for gpu in GPUS} == {0x283F}
    assert len(tree_digest(root / "files")) > len(CPUIDLE) + len(GPUS)
