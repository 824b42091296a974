"""A plan file is data: it changes this machine only when an id proves it is this machine's and each step is
the one rigaudit's own rules give here; a fleet merges results only by their machine ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.orchestrator.bench.ab import vouch
from rigaudit.orchestrator.change.trust import PlanRefused, check_machine, rederive
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.fleet.gathered import read_results
from rigaudit.tools.bench.machine import token
from rigaudit.tools.hosts.base import FileResult
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.plan import PlanStep
from tests.support.apply import SEED

Audit = dict[str, Any]
MACHINE_ID = b"0f1e2d3c4b5a69788796a5b4c3d2e1f0\n"


class Live(SnapshotHost):
    """The seed as this machine would be (read-only: a write would fail the test), with a machine-id."""

    def __init__(self, name: str = "", machine: bytes | None = MACHINE_ID) -> None:
        super().__init__(SEED)
        self._name, self._machine = name, machine

    @property
    def name(self) -> str:
        return self._name or super().name

    @property
    def source(self) -> str:
        return "local"

    async def read(self, path: str) -> FileResult:
        if path == "/etc/machine-id":
            return FileResult(path, self._machine) if self._machine is not None else FileResult(path, None, "ENOENT")
        return await super().read(path)


@pytest.fixture(scope="module")
def audited() -> Audit:
    """``audit --json`` of the live seed, made once."""
    result = anyio.run(run_audit, Live())
    assert dict(result.host.facts)["host_id"] == token(MACHINE_ID)
    value: Audit = json.loads(result.model_dump_json(by_alias=True))
    _AUDITED[:] = [value]
    return value


_AUDITED: list[Audit] = []


def _copy(audit: Audit) -> Audit:
    value: Audit = json.loads(json.dumps(audit))
    return value


def _step(audit: Audit, step_id: str) -> dict[str, Any]:
    return next(s for s in audit["plan"]["steps"] if s["id"] == step_id)


def _apply(
    tmp_path: Path, audit: Audit, host: Live, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str]]:
    """``apply --plan`` on this machine (``host``); its audit again (the rules' steps) is the one made once."""
    plan = tmp_path / "audit.json"
    plan.write_text(json.dumps(audit))
    monkeypatch.setattr("rigaudit.tools.hosts.local.LocalHost", lambda: host)
    derived = AuditResult.model_validate(_AUDITED[0])

    async def again(audited_host: object, **_: object) -> AuditResult:
        return derived

    monkeypatch.setattr("rigaudit.orchestrator.audit.run.run_audit", again)
    capsys.readouterr()
    code = main(["apply", "--plan", str(plan), "--yes", "--no-transcript", "--journal", str(tmp_path / "j.jsonl")])
    return code, capsys.readouterr().err.strip().splitlines()


def _demo_named_vm(audit: Audit) -> None:
    """The demo's audit: named ``vm`` as this machine is, and no machine id."""
    audit["host"]["name"] = "vm"
    del audit["host"]["facts"]["host_id"]


def _other_machine(audit: Audit) -> None:
    audit["host"]["facts"]["host_id"] = token(b"1" * 32)


def _nr_hugepages(audit: Audit) -> None:
    _step(audit, "numa.balancing")["actions"] = [{"type": "sysctl", "key": "vm.nr_hugepages", "value": "99999999"}]


def _other_sysctl(audit: Audit) -> None:
    _step(audit, "numa.balancing")["actions"] = [{"type": "sysctl", "key": "vm.swappiness", "value": "0"}]


def _sysfs_hugepages(audit: Audit) -> None:
    path = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
    _step(audit, "power.cstates")["actions"] = [{"type": "sysfs_write", "paths": [path], "value": "99999999"}]


def _fewer_cpus(audit: Audit) -> None:
    _step(audit, "power.cstates")["actions"][0]["paths"] = _step(audit, "power.cstates")["actions"][0]["paths"][:4]


def _step_the_rules_do_not_give(audit: Audit) -> None:
    step = dict(_step(audit, "numa.balancing"), id="kernel.swappiness", check="kernel.swappiness")
    step["actions"] = [{"type": "sysctl", "key": "vm.swappiness", "value": "10"}]
    audit["plan"]["steps"].append(step)


def _later_schema(audit: Audit) -> None:
    audit["schema"] = "rigaudit.audit/99"


REFUSED: dict[str, tuple[Callable[[Audit], None], str]] = {
    "an audit of another schema": (_later_schema, "not an `audit --json` result"),
    "the demo's plan, named like this machine": (_demo_named_vm, "records no machine identity (machine-id or product uuid)"),
    "another machine's plan": (_other_machine, "not vm (machine-id"),
    "nr_hugepages 99999999 under a step": (_nr_hugepages, "step numa.balancing: it changes vm.nr_hugepages = 99999999"),
    "another sysctl under a step": (_other_sysctl, "step numa.balancing: it changes vm.swappiness = 0"),
    "a sysfs pool of 99999999 huge pages": (_sysfs_hugepages, "step power.cstates: it changes /sys/kernel/mm/hugepages"),
    "a step's action cut short": (_fewer_cpus, "step power.cstates: its actions are not the rule's"),
    "a step the rules do not give here": (_step_the_rules_do_not_give, "step kernel.swappiness: rigaudit's rule"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_plan_file_not_proven_to_be_rigaudits_for_this_machine_is_refused_in_one_line(
    name: str, audited: Audit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, reason = REFUSED[name]
    audit = _copy(audited)
    edit(audit)
    code, err = _apply(tmp_path, audit, Live("vm"), monkeypatch, capsys)
    assert code == 2 and len(err) == 1, err
    assert reason in err[0] and "Traceback" not in err[0], err[0]
    assert not (tmp_path / "j.jsonl").exists()  # refused before a journal: nothing was changed


def test_rigaudits_own_plan_for_this_machine_passes(audited: Audit) -> None:
    result = AuditResult.model_validate(audited)
    host = Live()
    assert anyio.run(lambda: check_machine(result.host, host, live=True)).known
    runtime = [s for s in result.plan.steps if s.kind == "runtime" and s.where == "host"]
    assert {s.id for s in runtime} >= {"numa.balancing", "power.cstates", "pcie.mrrs"}
    anyio.run(rederive, runtime, host)
    anyio.run(lambda: vouch(result.host, host, runtime, live=True))  # bench ab's steps: the same rule


def test_bench_ab_refuses_an_edited_step_and_a_name_only_plan(audited: Audit) -> None:
    edited = _copy(audited)
    _other_sysctl(edited)
    result = AuditResult.model_validate(edited)
    step = result.plan.step("numa.balancing")
    assert isinstance(step, PlanStep)
    with pytest.raises(PlanRefused, match=r"step numa\.balancing: it changes vm\.swappiness = 0"):
        anyio.run(lambda: vouch(result.host, Live(), [step], live=True))
    _demo_named_vm(edited)
    nameless = AuditResult.model_validate(edited)
    with pytest.raises(PlanRefused, match="records no machine identity"):
        anyio.run(lambda: vouch(nameless.host, Live("vm"), [step], live=True))
    anyio.run(lambda: vouch(nameless.host, Live("vm", None), [step], live=False))  # a snapshot copy: a rehearsal


def test_a_machine_that_shows_no_id_cannot_take_a_plan(audited: Audit) -> None:
    result = AuditResult.model_validate(audited)
    with pytest.raises(PlanRefused, match="shows no machine-id or product uuid"):
        anyio.run(lambda: check_machine(result.host, Live(machine=None), live=True))


def test_a_demo_plan_still_applies_into_a_new_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo has no id: its own plan, applied into a copy of it, is a rehearsal and runs."""
    plan = tmp_path / "demo.json"
    assert main(["audit", "--demo", "--json", str(plan), "--no-transcript", "--no-live"]) in (0, 1, 3)
    assert "host_id" not in json.loads(plan.read_text())["host"]["facts"]
    copy = tmp_path / "copy"
    code = main(["apply", "--demo", "--into", str(copy), "--plan", str(plan), "--yes", "--no-transcript"])
    assert code == 0, capsys.readouterr().err
    assert (copy / "snapshot.json").is_file()


def _results(folder: Path, audit: Audit, name: str, file: str, host_id: str | None, started: str) -> None:
    value = _copy(audit)
    value["host"]["name"] = name
    value["started_at"] = started
    value["host"]["facts"].pop("host_id", None)
    if host_id is not None:
        value["host"]["facts"]["host_id"] = host_id
    (folder / file).write_text(json.dumps(value))


def test_a_fleet_never_merges_two_machines_of_one_name(audited: Audit, tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    a, b = token(b"a" * 32), token(b"b" * 32)
    _results(folder, audited, "vm", "vm-a.json", a, "2026-12-01T10:00:00Z")
    _results(folder, audited, "vm", "vm-a-older.json", a, "2026-11-30T10:00:00Z")
    _results(folder, audited, "vm", "vm-b.json", b, "2026-12-01T11:00:00Z")
    _results(folder, audited, "gpu", "gpu-1.json", None, "2026-12-01T10:00:00Z")
    _results(folder, audited, "gpu", "gpu-2.json", None, "2026-12-01T11:00:00Z")
    _results(folder, audited, "solo", "solo.json", None, "2026-12-01T11:00:00Z")
    fleet = read_results(folder)
    short = {x: x.removeprefix("machine-id:")[:8] for x in (a, b)}
    targets = [audit.target for audit in fleet.audits]
    assert sorted(targets) == sorted(
        [f"vm (machine-id {short[a]})", f"vm (machine-id {short[b]})", "gpu (gpu-1.json)", "gpu (gpu-2.json)", "solo"]
    )
    assert f"vm (machine-id {short[a]}): 2 results, the newest (vm-a.json) is used" in fleet.warnings
    apart = [w for w in fleet.warnings if "kept apart" in w]
    assert len(apart) == 2 and all("records no machine identity" in w and "named gpu" in w for w in apart)


def test_bench_ab_on_this_machine_refuses_an_edited_step_before_any_switch_or_request(
    audited: Audit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = _copy(audited)
    _other_sysctl(audit)
    plan = tmp_path / "audit.json"
    plan.write_text(json.dumps(audit))
    monkeypatch.setattr("rigaudit.tools.hosts.local.LocalHost", Live)
    derived = AuditResult.model_validate(audited)

    async def again(audited_host: object, **_: object) -> AuditResult:
        return derived

    monkeypatch.setattr("rigaudit.orchestrator.audit.run.run_audit", again)
    argv = ["bench", "ab", "--plan", str(plan), "--only", "numa.balancing", "--base-url", "http://127.0.0.1:9"]
    capsys.readouterr()
    code = main([*argv, "--model", "m", "--yes", "--journal", str(tmp_path / "j.jsonl"), "--no-transcript"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "step numa.balancing: it changes vm.swappiness = 0" in err[0], err
    assert not (tmp_path / "j.jsonl").exists()
