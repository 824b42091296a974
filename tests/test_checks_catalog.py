"""The check catalog: 60+ unique ids, each declared once, judged by its investigator, documented in docs/checks.md
and exercised by a test."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.catalog import catalog, render_markdown
from rigaudit.agents.check import Check
from rigaudit.agents.findings import ok
from rigaudit.agents.investigator import AnyInvestigator, Investigator
from rigaudit.agents.registry import all_investigators, area_names, resolve_areas
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.orchestrator.cli import main
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.session import Warning_
from rigaudit.tools.schema.events.union import Event

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "checks.md"
FIXTURES = sorted(p.parent for p in (ROOT / "tests" / "fixtures").glob("*/snapshot.json"))
DESIGN_IDS = (
    "firmware.rebar",
    "firmware.vbios_consistency",
    "firmware.cppc",
    "kernel.iommu",
    "kernel.thp",
    "kernel.swappiness",
    "kernel.cmdline_pcie",
    "kernel.version",
    "numa.balancing",
    "numa.gpu_affinity",
    "pcie.link",
    "pcie.mrrs",
    "pcie.mps",
    "pcie.acs",
    "pcie.aer",
    "driver.version",
    "driver.persistence",
    "driver.peermem",
    "driver.nouveau",
    "driver.uvm",
    "driver.fabricmanager",
    "cuda.compute_mode",
    "cuda.mig",
    "cuda.memory_in_use",
    "cuda.ecc_mode",
    "gpu.thermals",
    "gpu.clocks",
    "gpu.ecc_errors",
    "gpu.xid",
    "power.governor",
    "power.scaling_driver",
    "power.epp",
    "power.boost",
    "power.cstates",
    "power.gpu_power_limit",
    "p2p.status",
    "p2p.bandwidth",
    "nccl.env",
    "nvlink.links",
    "container.platform",
    "container.gpu_devices",
    "container.memlock",
    "container.shm",
    "runtime.torch_cuda",
    "runtime.env",
)
"""The ids of the design catalog (shared/design/checks.md): a public contract, never dropped."""


def _ids() -> list[str]:
    return [c.id for c in catalog()]


def _declared_in(investigator: AnyInvestigator) -> dict[str, Check]:
    """Every ``Check`` a module of the investigator's package declares, by the module and name declaring it."""
    package = importlib.import_module(f"rigaudit.agents.investigators.{investigator.area}")
    modules = [package] + [
        importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    ]
    return {
        f"{module.__name__}.{name}": value
        for module in modules
        for name, value in vars(module).items()
        if isinstance(value, Check) and getattr(module, "__name__", "") == module.__name__
    }


def test_at_least_60_unique_ids_with_area_prefixes() -> None:
    ids = _ids()
    assert len(ids) >= 60
    assert len(ids) == len(set(ids))
    for inv in all_investigators():
        assert [c.area for c in inv.checks] == [inv.area] * len(inv.checks), f"{inv.area}: a check prefix is not its area"


def test_design_ids_are_all_still_there() -> None:
    assert set(DESIGN_IDS) - set(_ids()) == set()


def test_every_check_is_documented() -> None:
    for check in catalog():
        assert check.title and check.reads and check.problem and check.fix, check.id


def test_every_declared_check_belongs_to_its_investigator() -> None:
    """A ``Check`` declared in an area package but missing from its investigator's ``checks`` is never run."""
    for inv in all_investigators():
        declared = _declared_in(inv)
        assert {c.id for c in declared.values()} == set(inv.check_ids), inv.area
        for where, check in declared.items():
            assert check in inv.checks, f"{where} ({check.id}) is not in {inv.area}'s checks"


@pytest.mark.parametrize("root", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_declared_check_is_judged_and_nothing_else(root: Path) -> None:
    probe = Probe(SnapshotHost(root))
    for inv in all_investigators():
        findings = inv.findings(anyio.run(inv.collect, probe))
        assert inv.contract_breaches(findings) == [], f"{inv.area} on {root.name}"


async def _collect_nothing(probe: Probe) -> None:
    return None


def test_the_contract_catches_unjudged_undeclared_and_foreign_checks() -> None:
    declared = Check("numa.a", "A", reads="r", problem="p", fix="f")
    other = Check("numa.b", "B", reads="r", problem="p", fix="f")
    inv = Investigator("numa", "NUMA", (declared, other), _collect_nothing, lambda _: [])
    judged = [ok("numa.a", "numa", "A", "fine"), ok("numa.c", "numa", "C", "fine"), ok("numa.a", "pcie", "A", "x")]
    breaches = inv.contract_breaches(judged)
    assert "numa.b: declared but never judged" in breaches
    assert "numa.c: judged but not declared" in breaches
    assert "numa.a: judged 2 times" in breaches
    assert "numa.a: area 'pcie', not 'numa'" in breaches
    in_order = [ok("numa.b", "numa", "B", "fine"), ok("numa.a", "numa", "A", "fine")]
    assert inv.contract_breaches(in_order) == [
        "findings in the order ['numa.b', 'numa.a'], not the declared ['numa.a', 'numa.b']"
    ]
    assert inv.contract_breaches(list(reversed(in_order))) == []


def test_a_check_id_is_shaped_area_name() -> None:
    with pytest.raises(ValueError, match=r"not shaped area\.name"):
        Check("Kernel.IOMMU", "t", reads="r", problem="p", fix="f")
    assert Check("kernel.iommu", "t", reads="r", problem="p", fix="f").area == "kernel"


def test_docs_checks_md_is_generated_from_the_code() -> None:
    text = DOCS.read_text(encoding="utf-8")
    in_docs = re.findall(r"^\| `([a-z0-9_.]+)` \|", text, re.MULTILINE)
    assert sorted(in_docs) == sorted(_ids()), "docs/checks.md and the code disagree on the check ids"
    assert text == render_markdown(catalog()), "docs/checks.md is stale: rigaudit checks --markdown > docs/checks.md"


def test_every_check_id_is_exercised_by_a_test() -> None:
    own = Path(__file__).name
    texts = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("tests/test_*.py")) if p.name != own]
    corpus = "\n".join(texts)
    missing = [c for c in _ids() if f'"{c}"' not in corpus]
    assert missing == [], f"no test names these checks: {missing}"


def test_every_area_has_its_brief() -> None:
    for area in area_names():
        assert (ROOT / "prompts" / f"{area}.md").is_file(), f"prompts/{area}.md is missing"
    assert sorted(p.stem for p in (ROOT / "prompts").glob("*.md")) == sorted(area_names())


def test_renamed_areas_resolve_to_the_areas_that_hold_their_checks() -> None:
    assert resolve_areas("kernel_params,numa") == (
        ["kernel", "numa"],
        ["area kernel_params is now called kernel; running kernel"],
        [],
    )
    areas, notes, unknown = resolve_areas("nccl_p2p, kernel_version,kernel,warp")
    assert areas == ["p2p", "nccl", "kernel"] and len(notes) == 2 and unknown == ["warp"]


def test_cli_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "rigaudit.checks/1"
    assert [c["check"] for c in data["checks"]] == _ids()
    numa = next(c for c in data["checks"] if c["check"] == "numa.hugepages")
    assert numa["area"] == "numa" and numa["fix_kinds"] == ["runtime"] and "HugePages" in numa["reads"]
    assert main(["checks", "--areas", "nvlink"]) == 0
    out = capsys.readouterr().out
    assert "nvlink.errors" in out and out.strip().endswith("2 checks") and "pcie.link" not in out


def test_cli_takes_an_old_area_name_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks", "--areas", "nccl_p2p"]) == 0
    captured = capsys.readouterr()
    assert "area nccl_p2p is now called p2p and nccl" in captured.err
    assert "p2p.status" in captured.out and "nccl.env" in captured.out and captured.out.strip().endswith("5 checks")


def test_cli_rejects_an_unknown_area(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks", "--areas", "warp_drive"]) == 2
    assert "unknown area warp_drive" in capsys.readouterr().err


def test_areas_have_one_spelling_and_the_old_one_still_works(seed_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--areas A,B`` in audit, check and checks; ``checks --area`` (the old spelling) works with a one-line notice."""
    assert main(["checks", "--area", "nvlink", "--area", "numa"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == "rigaudit: note: --area is now --areas A,B (one spelling in audit, check and checks)"
    assert main(["checks", "--areas", "nvlink,numa"]) == 0
    assert capsys.readouterr().out == captured.out
    assert main(["check", "--snapshot", str(seed_dir), "--areas", "numa", "--json", "-"]) in (0, 1)
    assert {c["check"].split(".")[0] for c in json.loads(capsys.readouterr().out)["checks"]} == {"numa"}


def test_an_audit_warns_when_rules_break_the_contract(seed_dir: Path) -> None:
    declared = Check("numa.a", "A", reads="r", problem="p", fix="f")
    inv = Investigator("numa", "NUMA", (declared,), _collect_nothing, lambda _: [ok("numa.z", "numa", "Z", "fine")])
    events: list[Event] = []
    result = anyio.run(lambda: run_audit(SnapshotHost(seed_dir), options=AuditOptions(investigators=[inv]), emit=events.append))
    warnings = [e.text for e in events if isinstance(e, Warning_)]
    assert "numa: numa.a: declared but never judged (a bug of rigaudit's rules: please report it)" in warnings
    assert any("numa.z: judged but not declared" in w for w in warnings)
    assert [f.check for f in result.findings] == ["numa.z"]
