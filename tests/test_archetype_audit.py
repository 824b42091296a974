"""Every generated archetype audits end to end with today's rules, and its snapshot answers every read the audit makes.

These tests pin what must hold whatever the rules conclude (no investigator fails, nothing the audit asks is missing
from the fixture, the baseline names the host right); what the rules conclude on each archetype is the table in
docs/validation/archetypes-before.md (``python -m tests.hostgen.table``), and expected verdicts live in the
diagnosis tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.hostgen.catalog import GPUS
from tests.hostgen.table import render
from tests.hostgen.vgpu import name as vgpu_name
from tests.support.audits import audited as shared_audit
from tests.support.audits import unanswered

DOC = Path(__file__).parent.parent / "docs" / "validation" / "archetypes-before.md"


def audited(name: str) -> tuple[AuditResult, frozenset[str]]:
    """The session's audit of the archetype (tests/support/audits.py), and what its snapshot did not answer."""
    return shared_audit(ARCHETYPES[name]), unanswered(ARCHETYPES[name])


@pytest.mark.parametrize("name", sorted(ARCHETYPES))
def test_archetype_audits_completely(name: str) -> None:
    result, missing = audited(name)
    assert [(r.area, r.error) for r in result.investigators if r.status != "done"] == []
    assert missing == set(), "the fixture lacks what a real snapshot of this host would record"
    assert not [f.check for f in result.findings if "not recorded in this snapshot" in (f.observed or "")]
    spec = ARCHETYPES[name]
    facts = result.host.facts
    assert facts["kernel"] == spec.os.kernel
    visible = len(spec.platform.visible_gpus) if spec.platform.visible_gpus is not None else spec.gpus.count
    if not spec.driver.userspace:
        model = GPUS[spec.gpus.model]
        name = vgpu_name(model, spec.gpus.vgpu) if spec.gpus.vgpu else model.name
        assert facts["gpus"].startswith(f"{visible} x {name}")
    checks = [f.check for f in result.findings]
    assert len(checks) == len(set(checks)), "one finding per check"


def test_table_covers_every_archetype_and_check() -> None:
    names = ["gcp-g2-2xl4-vm", "geforce-4x4090"]
    results = {n: audited(n)[0] for n in names}
    text = render([ARCHETYPES[n] for n in names], results)
    checks = {f.check for r in results.values() for f in r.findings}
    for check in checks:
        assert f"| `{check}` |" in text
    assert "### `geforce-4x4090`" in text and "**P:" in text


def test_committed_table_names_every_archetype() -> None:
    text = DOC.read_text()
    for name in ARCHETYPES:
        assert f"`{name}`" in text, f"regenerate {DOC} with: python -m tests.hostgen.table"


def test_cli_audits_a_generated_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    root = snapshot(ARCHETYPES["gh200-node"])
    code = main(["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--json", "-"])
    out = capsys.readouterr().out
    assert code in (0, 3)
    data = json.loads(out[out.index("{") :])
    assert data["schema"] == "rigaudit.audit/1"
    assert data["host"]["facts"]["platform"].replace("_", " ") == "bare metal"
