"""Premises as data: every check declares the facts its verdict rests on; where one is missing the verdict is
``unknown`` naming what would tell, never ``ok``; a finding carries its premises; ``audit --explain`` shows them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.catalog import catalog
from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok, problem
from rigaudit.agents.investigator import Investigator
from rigaudit.agents.premise import PREMISES, Premise, held, missing
from rigaudit.agents.registry import select
from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding, PremiseRead
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.support import mutate
from tests.support.investigators import audit_snapshot

HOSTS = {**ARCHETYPES, **KINDS}


def test_every_check_declares_its_premises_by_known_names() -> None:
    checks = catalog()
    assert len(checks) == 72
    undeclared = [c.id for c in checks if c.premises is None]
    assert undeclared == [], f"checks without a premises declaration (use () for none): {undeclared}"
    for check in checks:
        names = [p.name for p in check.premises or ()]
        assert len(names) == len(set(names)), f"{check.id} names a premise twice"
        assert set(names) <= set(PREMISES), check.id
    resting = [c for c in checks if c.premises]
    assert len(resting) >= 60, "nearly every verdict rests on a fact it does not read itself"
    assert {p.name for c in checks for p in c.premises or ()} == set(PREMISES), "a premise name no check uses"
    assert [c.id for c in checks if not c.premises] == ["container.platform"], "only the platform's own check rests on none"


def test_the_catalog_lists_each_checks_premises() -> None:
    entries = {c.id: c.as_dict() for c in catalog()}
    assert [p["name"] for p in entries["driver.version"]["premises"]] == ["gpus", "driver", "driver_flavor"]  # type: ignore[index,union-attr]
    assert entries["container.platform"]["premises"] == []
    assert "none" in (Path(__file__).resolve().parent.parent / "docs" / "checks.md").read_text()
    text = (Path(__file__).resolve().parent.parent / "docs" / "checks.md").read_text()
    assert "| `driver.version` |" in text and "`driver_flavor` |" in text


async def _nothing(_probe: object) -> dict[str, str | None]:
    return {}


def _investigator(
    premises: tuple[Premise, ...], verdict: Callable[[dict[str, str | None]], Finding]
) -> Investigator[dict[str, str | None]]:
    check = Check("numa.x", "X", reads="r", problem="p", fix="f", premises=premises)
    return Investigator("numa", "NUMA", (check,), _nothing, lambda facts: [verdict(facts)])


KERNEL = Premise("kernel", "osrelease", lambda f: held(f["kernel"]) if f.get("kernel") else missing("uname -r would tell"))


def test_a_missing_premise_makes_ok_and_problem_unknown_naming_what_would_tell() -> None:
    fine = _investigator((KERNEL,), lambda _: ok("numa.x", "numa", "X", "all good"))
    [read] = fine.findings({"kernel": "6.8.0"})
    assert (read.status, read.premises) == ("ok", (PremiseRead(name="kernel", state="held", value="6.8.0"),))
    [withheld] = fine.findings({})
    assert withheld.status == "unknown" and "uname -r would tell" in withheld.observed and "all good" in withheld.observed
    assert withheld.premises[0].state == "missing"
    fix = None
    bad = _investigator((KERNEL,), lambda _: problem("numa.x", "numa", "X", "high", "bad", "good", "why", fix))
    [unheld] = bad.findings({})
    assert (unheld.status, unheld.severity, unheld.fix) == ("unknown", None, None)


def test_a_premise_guards_only_the_verdicts_it_names() -> None:
    only_problems = Premise("kernel", "osrelease", lambda _: missing("uname -r would tell"), guards=("problem",))
    inv = _investigator((only_problems,), lambda _: ok("numa.x", "numa", "X", "present"))
    assert [f.status for f in inv.findings({})] == ["ok"]


def test_a_failing_premise_reader_reads_as_missing() -> None:
    broken = Premise("kernel", "osrelease", lambda f: held(f["absent"]))
    [finding] = _investigator((broken,), lambda _: ok("numa.x", "numa", "X", "fine")).findings({})
    assert finding.status == "unknown" and "KeyError" in finding.observed


def test_an_unknown_premise_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Premise("weather", "the sky", lambda _: held("sunny"))


PLATFORM_UNREAD = ("command:systemd-detect-virt", "file:/proc/cpuinfo", "tree:/sys/devices/virtual/dmi")
CASES = [
    # (host, area, check, what is removed so that the premise is unread, premise, what would tell)
    ("hgx-h200-noble", "kernel", "kernel.version", ("file:/proc/cpuinfo",), "cpu", "/proc/cpuinfo"),
    ("epyc-nps4-l40s", "power", "power.scaling_driver", ("file:/proc/cpuinfo",), "cpu", "/proc/cpuinfo"),
    ("epyc-nps4-l40s", "power", "power.scaling_driver", ("file:/proc/sys/kernel/osrelease",), "kernel", "uname -r"),
    ("hgx-b200-noble", "driver", "driver.version", ("file:/proc/driver/nvidia/version",), "driver_flavor", "Open Kernel"),
    ("hgx-h100-jammy", "numa", "numa.gpu_affinity", PLATFORM_UNREAD, "platform", "systemd-detect-virt"),
    ("hgx-h100-jammy", "p2p", "p2p.status", PLATFORM_UNREAD, "platform", "/sys/class/dmi/id"),
]
REMOVE = {"file": mutate.remove_file, "tree": mutate.remove_tree, "command": mutate.remove_command}


@pytest.mark.parametrize(("host", "area", "check", "removed", "premise", "tell"), CASES, ids=[f"{c[2]}-{c[4]}" for c in CASES])
def test_a_host_without_a_premises_source_gets_unknown_not_a_verdict(
    tmp_path: Path, host: str, area: str, check: str, removed: tuple[str, ...], premise: str, tell: str
) -> None:
    investigators = select([area])
    base = snapshot(HOSTS[host])
    whole = audit_snapshot(investigators, base)[check]
    assert whole.status in ("ok", "problem") and {p.name: p.state for p in whole.premises}[premise] == "held"
    root = mutate.light_copy(base, tmp_path / "snap")
    for item in removed:
        kind, _, path = item.partition(":")
        REMOVE[kind](root, path)
    finding = audit_snapshot(investigators, root, problem_has_fix=True)[check]
    assert finding.status == "unknown", finding.observed
    assert {p.name: p.state for p in finding.premises}[premise] == "missing"
    assert tell in finding.observed and premise in finding.observed


def test_a_finding_with_premises_round_trips_and_an_older_one_loads() -> None:
    finding = ok("kernel.thp", "kernel", "THP", "madvise").model_copy(
        update={"premises": (PremiseRead(name="kernel", state="missing", value="uname -r would tell"),)}
    )
    assert Finding.model_validate_json(finding.model_dump_json()) == finding
    older = finding.model_dump(mode="json")
    del older["premises"]
    assert Finding.model_validate(older).premises == ()
    result = AuditResult.model_validate({"host": {"name": "x", "source": "x"}, "started_at": "", "duration_s": 0})
    carried = result.model_copy(update={"findings": (finding,)})
    assert AuditResult.model_validate_json(carried.model_dump_json()).findings == (finding,)


def test_audit_explain_prints_the_verdict_its_premises_and_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = mutate.light_copy(snapshot(HOSTS["hgx-b200-noble"]), tmp_path / "snap")
    mutate.remove_file(root, "/proc/driver/nvidia/version")
    code = main(["audit", "--snapshot", str(root), "--explain", "driver.version", "--no-live", "--no-transcript"])
    out = capsys.readouterr().out
    assert code == 0
    explained = out[out.index("driver.version  ") :]
    assert "verdict:   unknown" in explained
    assert [
        line.split()[:2] for line in explained.splitlines() if line.startswith("  ") and line.split()[0] in ("held", "missing")
    ] == [
        ["held", "gpus"],
        ["held", "driver"],
        ["missing", "driver_flavor"],
    ]
    assert "evidence:" in explained and "/sys/module/nvidia/version" in explained


def test_audit_explain_refuses_a_check_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--demo", "--explain", "driver.nothing", "--no-live", "--no-transcript"]) == 2
    assert "driver.nothing" in capsys.readouterr().err


def test_explain_is_judged_by_the_whole_audit_path() -> None:
    """The audit runs :meth:`Investigator.findings`: its findings carry their premises."""
    from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
    from rigaudit.tools.hosts.snapshot import SnapshotHost

    result = anyio.run(
        lambda: run_audit(SnapshotHost(snapshot(HOSTS["hgx-h200-noble"])), options=AuditOptions(areas=["firmware"]))
    )
    assert all(f.premises for f in result.findings if f.check != "container.platform")
