"""``rigaudit check`` imports only what the gate needs: what a process that ran it has loaded, not how long it took.

Each test runs the gate in a new interpreter (imports are per process) and looks at ``sys.modules`` and at
the default policy's counters afterwards: no timing, so nothing here depends on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200x2-vm"

_PROGRAM = """
import json, sys
from rigaudit.orchestrator.cli import main
code = main(sys.argv[2:])
import pydantic
from rigaudit.tools.model import events
from rigaudit.tools.policy import POLICY
built = [n for n, c in vars(events).items()
         if isinstance(c, type) and issubclass(c, events._Event) and c is not events._Event and c.__pydantic_complete__]
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "examples_checked": POLICY.examples_checked,
               "compiled": POLICY.compiled, "rules": len(POLICY.rules), "events_built": built}, out)
"""

HEAVY = (
    "rich",
    "openai",
    "httpx",
    "torch",
    "tarfile",
    "rigaudit.agents.llm",
    "rigaudit.transcripts.writer",
    "rigaudit.transcripts.store",
    "rigaudit.orchestrator.session",
    "rigaudit.orchestrator.ui",
    "rigaudit.orchestrator.chat",
    "rigaudit.orchestrator.fleet",
    "rigaudit.orchestrator.report",
    "rigaudit.tools.share",
    "rigaudit.tools.actions",
    "rigaudit.tools.bench.p2p",
)
"""What the gate never needs: the terminal UI, the LLM code and its client, the transcript writer, the fleet,
fix actions, benchmark records, the demo archives."""

ONLY_WHEN_ASKED = (
    "rigaudit.orchestrator.gate.expect",
    "rigaudit.orchestrator.gate.prometheus",
    "rigaudit.orchestrator.output",
)
"""What the gate imports only for --expect, --prometheus and --json."""


def _gate(tmp_path: Path, *argv: str) -> dict[str, object]:
    """Run ``rigaudit check ARGV`` in a new interpreter; what it loaded. The deadline is long: a loaded machine
    must not turn the run into "could not check" (the deadline is tested in test_gate_check.py)."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(report), "check", "--deadline", "240", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert report.is_file(), done.stderr
    result: dict[str, object] = json.loads(report.read_text())
    return result


def _loaded(modules: object, names: tuple[str, ...]) -> list[str]:
    assert isinstance(modules, list)
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _gate(tmp_path_factory.mktemp("gate"), "-q", "--snapshot", str(H200))


def test_a_check_loads_no_heavy_module(gate_run: dict[str, object]) -> None:
    assert gate_run["code"] == 0
    assert _loaded(gate_run["modules"], HEAVY) == []
    assert _loaded(gate_run["modules"], ONLY_WHEN_ASKED) == []
    commands = _loaded(gate_run["modules"], ("rigaudit.orchestrator.commands",))
    assert commands == ["rigaudit.orchestrator.commands", "rigaudit.orchestrator.commands.check"]


def test_a_check_judges_no_policy_example_and_compiles_only_the_rules_it_uses(gate_run: dict[str, object]) -> None:
    assert gate_run["examples_checked"] == 0
    compiled, rules = gate_run["compiled"], gate_run["rules"]
    assert isinstance(compiled, int) and isinstance(rules, int)
    assert 0 < compiled < rules / 4, (compiled, rules)


def test_a_check_builds_only_the_events_it_emits(gate_run: dict[str, object]) -> None:
    built = gate_run["events_built"]
    assert isinstance(built, list)
    assert "InvestigatorFinished" in built
    assert not {"ApplyFinished", "FleetFinished", "LlmExchange", "BenchResultReported"} & set(built)


def test_the_outputs_import_their_writers_only_when_asked(tmp_path: Path) -> None:
    """--json also reads the fleet's fingerprint (its one fleet module)."""
    expect = tmp_path / "expect.conf"
    expect.write_text("gpus = 2\n")
    run = _gate(
        tmp_path,
        *("-q", "--snapshot", str(H200), "--expect", str(expect)),
        *("--json", str(tmp_path / "r.json"), "--prometheus", str(tmp_path / "r.prom")),
    )
    assert run["code"] == 0
    assert _loaded(run["modules"], ONLY_WHEN_ASKED) == list(ONLY_WHEN_ASKED)
    assert _loaded(run["modules"], HEAVY) == ["rigaudit.orchestrator.fleet", "rigaudit.orchestrator.fleet.fingerprint"]


def test_importing_the_command_alone_loads_neither_the_policy_nor_pydantic() -> None:
    program = "import sys, rigaudit.orchestrator.commands.check; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    modules = done.stdout
    for name in ("'pydantic'", "'rigaudit.tools.policy'", "'asyncio'", "'rich'", "'importlib.metadata'"):
        assert name not in modules, name


def test_version_is_looked_up_only_when_asked() -> None:
    done = subprocess.run([sys.executable, "-m", "rigaudit", "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.startswith("rigaudit ") and done.stdout.count("\n") == 1 and done.stderr == ""
