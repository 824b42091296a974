"""Persistence kept (or left off) by nvidia-persistenced's unit options: a daemon that runs with
--no-persistence-mode is not fixed by starting it, but by its unit's option."""

from __future__ import annotations

from rigaudit.agents.investigators.driver import INVESTIGATOR
from rigaudit.tools.schema.finding import ServiceStartAction
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot


def test_a_daemon_run_with_no_persistence_mode_gets_its_option_fixed() -> None:
    """Before: 'Start nvidia-persistenced (and enable it at boot)' for a daemon that was active all along."""
    root = snapshot(faults.persistence_by_unit(ARCHETYPES["hgx-h100-jammy"]))
    found = audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)["driver.persistence"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert found.fix is not None and "--no-persistence-mode" in found.fix.summary
    assert not any(isinstance(a, ServiceStartAction) for a in found.fix.actions)
    described = " ".join(a.description for a in found.fix.actions if hasattr(a, "description"))
    assert "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --verbose" in described
    assert "/lib/systemd/system/nvidia-persistenced.service" in found.explanation
