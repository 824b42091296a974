"""``rigaudit check`` imports only what the gate needs: what a process that ran it has loaded, not how long it took.

Each test runs the gate in a new interpreter (imports are per process) and looks at ``sys.modules`` and at
the default policy's counters afterwards: no timing, so nothing here depends on the machine's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200x2-vm"

_PROGRAM = """
import dataclasses, gc, json, os, sys
from rigaudit.orchestrator.cli import main
code = main(sys.argv[2:])
import pydantic
from rigaudit.tools.schema.events.base import BaseEvent
from rigaudit.tools.policy import POLICY
from rigaudit.tools.policy.globs import Globs
from rigaudit.tools.core.record import Record
built = [n for name, m in list(sys.modules.items()) if name.startswith("rigaudit.tools.schema.events.")
         for n, c in vars(m).items() if isinstance(c, type) and issubclass(c, pydantic.BaseModel)
         and c.__module__ == name and c is not BaseEvent and c.__pydantic_complete__]
records = [f"{m.__name__}.{k}" for name, m in list(sys.modules.items()) if name.startswith("rigaudit.")
           for k, v in vars(m).items() if isinstance(v, type) and v.__module__ == name
           and (dataclasses.is_dataclass(v) or (issubclass(v, tuple) and hasattr(v, "_fields")))]
made = [f"{m.__name__}.{k}" for name, m in list(sys.modules.items()) if name.startswith("rigaudit.")
        for k, v in vars(m).items() if isinstance(v, type) and v.__module__ == name and issubclass(v, Record)]
lists = [g for g in gc.get_objects() if isinstance(g, Globs)]
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "examples_checked": POLICY.examples_checked,
               "compiled": POLICY.compiled, "rules": len(POLICY.rules), "events_built": built, "dataclasses": records,
               "records": made,
               "path_lists": len(lists), "path_lists_compiled": sum(g._regex is not None for g in lists),
               "plugins_switch": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}, out)
"""

HEAVY = (
    "rich",
    "openai",
    "httpx",
    "torch",
    "tarfile",
    "importlib.metadata",
    "zipfile",
    "rigaudit.agents.llm",
    "rigaudit.transcripts.writer",
    "rigaudit.transcripts.store",
    "rigaudit.orchestrator.session.core",
    "rigaudit.orchestrator.ui",
    "rigaudit.orchestrator.chat",
    "rigaudit.orchestrator.fleet",
    "rigaudit.orchestrator.report.document",
    "rigaudit.tools.share",
    "rigaudit.tools.actions",
    "rigaudit.tools.bench.p2p",
    "rigaudit.tools.redact",
    "rigaudit.agents.brain",
    "rigaudit.tools.schema.events.union",
    "rigaudit.tools.schema.events.session",
    "rigaudit.tools.schema.events.apply",
    "rigaudit.tools.schema.events.bench",
    "rigaudit.tools.schema.events.catalog",
    "rigaudit.tools.schema.events.chat",
    "rigaudit.tools.schema.events.diff",
    "rigaudit.tools.schema.events.fleet",
    "rigaudit.tools.schema.events.transcripts",
)
"""What the gate never needs: the terminal UI, the LLM code and its client, the transcript writer, the fleet,
fix actions, benchmark records, the demo archives; the redaction of secrets (imported when a finding quotes a
process's command line or environment: none does on the fixture); the events of other commands and the union of
every event (what a transcript reads and writes); the session's events (a check emits a warning only for a rule's
bug or an LLM's failure) and the brains (the rules alone need none)."""

ONLY_WHEN_ASKED = (
    "rigaudit.orchestrator.gate.expect",
    "rigaudit.orchestrator.gate.prometheus",
    "rigaudit.orchestrator.report.output",
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
    assert commands == [
        "rigaudit.orchestrator.commands",
        "rigaudit.orchestrator.commands._arguments",
        "rigaudit.orchestrator.commands._options",
        "rigaudit.orchestrator.commands._outputs",
        "rigaudit.orchestrator.commands.check",
    ]


def test_a_check_judges_no_policy_example_and_compiles_only_the_rules_it_uses(gate_run: dict[str, object]) -> None:
    assert gate_run["examples_checked"] == 0
    compiled, rules = gate_run["compiled"], gate_run["rules"]
    assert isinstance(compiled, int) and isinstance(rules, int)
    assert 0 < compiled < rules / 4, (compiled, rules)


EMITTED = {
    "InvestigatorStarted",
    "InvestigatorActivity",
    "InvestigatorFinished",
    "ToolCall",
    "FindingReported",
    "PlanReady",
    "AuditFinished",
    "TopologyReported",
    "PcieDevice",
    "GateReported",
}
"""What a check of the fixture emits (``GateReported``: its lines are drawn from it; and ``TopologyReported``'s
payload): the only models of tools/schema/events/ it may build (each model's validator costs instructions at every start)."""


def test_a_check_builds_only_the_events_it_emits(gate_run: dict[str, object]) -> None:
    built = gate_run["events_built"]
    assert isinstance(built, list)
    assert "InvestigatorFinished" in built
    unused = set(built) - EMITTED
    assert not unused, f"built by a check that never emits them: give {sorted(unused)} defer_build=True"


def test_a_check_creates_its_records_without_generating_code(gate_run: dict[str, object]) -> None:
    """A frozen dataclass costs CPython 3.11/3.12 about 4 M instructions to create (six methods compiled from
    source), a ``typing.NamedTuple`` about 1 M (its ``__new__`` and every string annotation compiled), a
    :class:`~rigaudit.tools.core.record.Record` about 0.1 M: the gate's path holds only records."""
    created, records = gate_run["dataclasses"], gate_run["records"]
    assert isinstance(created, list) and isinstance(records, list)
    assert len(records) > 100, len(records)
    assert created == [], sorted(created)


def test_a_check_translates_few_of_the_policy_path_lists(gate_run: dict[str, object]) -> None:
    lists, compiled = gate_run["path_lists"], gate_run["path_lists_compiled"]
    assert isinstance(lists, int) and isinstance(compiled, int)
    assert lists >= 10 and compiled <= lists // 4, (compiled, lists)


def test_the_outputs_import_their_writers_only_when_asked(tmp_path: Path) -> None:
    """--json also reads the fleet's fingerprint (its one fleet module) and redacts what it writes."""
    expect = tmp_path / "expect.conf"
    expect.write_text("gpus = 2\n")
    run = _gate(
        tmp_path,
        *("-q", "--snapshot", str(H200), "--expect", str(expect)),
        *("--json", str(tmp_path / "r.json"), "--prometheus", str(tmp_path / "r.prom")),
    )
    assert run["code"] == 0
    assert _loaded(run["modules"], ONLY_WHEN_ASKED) == list(ONLY_WHEN_ASKED)
    loaded = [m for m in _loaded(run["modules"], HEAVY) if not m.startswith("rigaudit.tools.redact")]
    assert loaded == ["rigaudit.orchestrator.fleet", "rigaudit.orchestrator.fleet.fingerprint"]


def test_importing_the_command_alone_loads_neither_the_policy_nor_pydantic() -> None:
    program = "import sys, rigaudit.orchestrator.commands.check; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    modules = done.stdout
    for name in ("'pydantic'", "'rigaudit.tools.policy'", "'asyncio'", "'rich'", "'importlib.metadata'"):
        assert name not in modules, name


def test_version_is_looked_up_only_when_asked() -> None:
    done = subprocess.run([sys.executable, "-m", "rigaudit", "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.startswith("rigaudit ") and done.stdout.count("\n") == 1 and done.stderr == ""


def test_a_check_leaves_the_plugin_switch_as_it_found_it(gate_run: dict[str, object]) -> None:
    assert gate_run["plugins_switch"] == os.environ.get("PYDANTIC_DISABLE_PLUGINS")


_PLUGIN = """
from pathlib import Path

Path(MARK).write_text("imported")


class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Plugin()
"""


@pytest.mark.parametrize(("switch", "imported"), [(None, False), ("", True)], ids=["default", "user-turned-on"])
def test_a_check_imports_no_pydantic_plugin_unless_the_user_turned_them_on(
    tmp_path: Path, switch: str | None, imported: bool
) -> None:
    """An installed pydantic plugin is third-party code: the gate (root, in a prolog) does not import it, unless
    the environment says otherwise (``PYDANTIC_DISABLE_PLUGINS`` set, here to empty: plugins on)."""
    site = tmp_path / "site"
    info = site / "marker_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: marker-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nmarker = marker_plugin:plugin\n")
    mark = tmp_path / "mark"
    (site / "marker_plugin.py").write_text(_PLUGIN.replace("MARK", repr(str(mark))))
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(site), env.get("PYTHONPATH"))))
    if switch is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = switch
    argv = [sys.executable, "-m", "rigaudit", "check", "-q", "--only", "nvlink", "--deadline", "240", "--snapshot", str(H200)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert mark.exists() is imported


_STAND_IN = """
import json, sys
from rigaudit.orchestrator.gate import without_pydantic_plugins
from pydantic.plugin import _schema_validator
with without_pydantic_plugins():
    loader = sys.modules["pydantic.plugin._loader"]
    inside = {"none": list(loader.get_plugins()), "metadata": "importlib.metadata" in sys.modules}
    from pydantic import BaseModel
    class Inside(BaseModel):
        x: int
    inside["built"] = Inside(x=1).x
    inside["group"] = loader.PYDANTIC_ENTRY_POINT_GROUP  # any other name: the real module's
    inside["real_now"] = sys.modules["pydantic.plugin._loader"] is not loader
after = sys.modules.get("pydantic.plugin._loader")
print(json.dumps({"inside": inside, "after_real": after is None or hasattr(after, "__file__")}))
"""


def test_pydantic_s_loader_is_stood_in_for_only_while_plugins_are_off() -> None:
    """With plugins off, pydantic's loader (which imports ``importlib.metadata`` to find none) is a stand-in that
    finds none; a name the stand-in lacks comes from the real loader, and afterwards the real one is what loads."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", _STAND_IN], capture_output=True, text=True, timeout=60, env=env, check=True)
    found = json.loads(done.stdout)
    assert found["inside"] == {"none": [], "metadata": False, "built": 1, "group": "pydantic", "real_now": True}
    assert found["after_real"] is True


def test_a_live_host_opens_without_the_snapshot_reader() -> None:
    program = (
        "import sys; from rigaudit.orchestrator.hosts.choose import HostSource, open_host; "
        "print(type(open_host(HostSource())).__name__, 'rigaudit.tools.hosts.snapshot' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["LocalHost", "False"]


_IMPORTS_ONLY = """
import json, re, sys
from rigaudit.orchestrator.gate import without_pydantic_plugins
with without_pydantic_plugins():
    import rigaudit.orchestrator.cli, rigaudit.orchestrator.commands.check, rigaudit.orchestrator.gate.run
    import rigaudit.orchestrator.gate.render, rigaudit.tools.hosts.local
    from rigaudit.agents.registry import all_investigators
    all_investigators()


def patterns(value, depth=0):
    if isinstance(value, re.Pattern):
        return 1
    if depth < 2 and isinstance(value, (tuple, list, frozenset, set)):
        return sum(patterns(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, dict):
        return sum(patterns(v, depth + 1) for v in value.values())
    return 0


found = {f"{name}.{k}": n for name, m in list(sys.modules.items()) if name.startswith("rigaudit.")
         for k, v in vars(m).items() if (n := patterns(v))}
print(json.dumps({"patterns": found, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def gate_imports() -> dict[str, object]:
    """What a live check's imports leave loaded (the command, the gate, the investigators, the local host)."""
    done = subprocess.run([sys.executable, "-c", _IMPORTS_ONLY], capture_output=True, text=True, timeout=120, check=True)
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_a_check_s_imports_compile_no_regular_expression(gate_imports: dict[str, object]) -> None:
    """A module-level pattern is a string that ``re``'s functions compile (and cache) when a check first uses it: a
    check of a host uses some of them, its imports none (each compiled one costs about 0.6 M instructions)."""
    assert gate_imports["patterns"] == {}, "keep the pattern a string, match with re.fullmatch(PATTERN, text) and the like"


def test_a_check_s_imports_leave_the_union_of_events_out(gate_imports: dict[str, object]) -> None:
    modules = gate_imports["modules"]
    assert isinstance(modules, list)
    events = sorted(m for m in modules if m.startswith("rigaudit.tools.schema.events."))
    base = "rigaudit.tools.schema.events"
    assert events == [f"{base}.audit", f"{base}.base", f"{base}.gate", f"{base}.sink"]
