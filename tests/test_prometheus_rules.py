"""deploy/prometheus: the example alert rules pass ``promtool check rules`` and their unit tests (``promtool test
rules``), and the Grafana panel's queries parse and name only series ``rigaudit check --prometheus`` writes (or
dcgm-exporter's, to join)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rigaudit.orchestrator.gate.prometheus import render
from rigaudit.tools.schema.check import CheckResult

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"
_METRIC = re.compile(r"\b(rigaudit_[a-z_]+|DCGM_[A-Z_]+)\b")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed (Debian package prometheus): run .ci/fleet-setup.sh")
    return found


def run(*argv: str) -> None:
    done = subprocess.run([promtool(), *argv], capture_output=True, text=True, timeout=120, cwd=DEPLOY)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_alert_rules_check_and_their_tests_pass() -> None:
    run("check", "rules", "rigaudit-rules.yaml")
    run("test", "rules", "rigaudit-rules.test.yaml")


def written(tmp_path: Path) -> set[str]:
    from rigaudit.orchestrator.cli import main

    out = tmp_path / "r.json"
    main(["check", "--snapshot", str(H200), "--json", str(out), "-q"])
    text = render(CheckResult.model_validate_json(out.read_text()))
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def test_the_panel_and_the_rules_name_series_the_gate_writes(tmp_path: Path) -> None:
    names = written(tmp_path)
    panel = json.loads((DEPLOY / "grafana-panel.json").read_text())
    exprs = [t["expr"] for t in panel["targets"]]
    rules = (DEPLOY / "rigaudit-rules.yaml").read_text()
    used = {m for text in (*exprs, rules) for m in _METRIC.findall(text)}
    assert used - names <= {"DCGM_FI_DEV_GPU_TEMP"} and used & names
    rules_file = tmp_path / "panel-rules.yaml"  # promtool parses PromQL through a rule file
    groups = [{"name": "panel", "rules": [{"record": f"panel:q{i}", "expr": e} for i, e in enumerate(exprs)]}]
    rules_file.write_text(json.dumps({"groups": groups}))
    run("check", "rules", str(rules_file))
