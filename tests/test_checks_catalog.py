"""The check catalog: 60+ unique ids, each documented in docs/checks.md and exercised by a test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rigaudit.agents.catalog import catalog, render_markdown
from rigaudit.agents.registry import all_investigators
from rigaudit.orchestrator.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "checks.md"
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
    return [c for inv in all_investigators() for c in inv.checks]


def test_at_least_60_unique_ids_with_area_prefixes() -> None:
    ids = _ids()
    assert len(ids) >= 60
    assert len(ids) == len(set(ids))
    for inv in all_investigators():
        for check in inv.checks:
            assert re.fullmatch(r"[a-z0-9]+\.[a-z0-9_]+", check), check


def test_design_ids_are_all_still_there() -> None:
    assert set(DESIGN_IDS) - set(_ids()) == set()


def test_every_check_is_documented() -> None:
    for entry in catalog():
        assert entry.doc is not None, f"{entry.check}: no CheckDoc (docs= on its investigator, or FALLBACK_DOCS)"
        assert entry.doc.title and entry.doc.reads and entry.doc.problem and entry.doc.fix, entry.check
    for inv in all_investigators():
        assert set(inv.docs) <= set(inv.checks), f"{inv.area}: docs for checks it does not run"


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


def test_cli_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "rigaudit.checks/1"
    assert [c["check"] for c in data["checks"]] == _ids()
    numa = next(c for c in data["checks"] if c["check"] == "numa.hugepages")
    assert numa["area"] == "numa" and numa["fix_kinds"] == ["runtime"] and "HugePages" in numa["reads"]
    assert main(["checks", "--area", "nvlink"]) == 0
    out = capsys.readouterr().out
    assert "nvlink.errors" in out and out.strip().endswith("2 checks") and "pcie.link" not in out


def test_cli_rejects_an_unknown_area(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks", "--area", "warp_drive"]) == 2
    assert "unknown area warp_drive" in capsys.readouterr().err
