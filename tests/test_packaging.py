"""What lands in site-packages: one ``rigaudit`` package, which coexists with the OpenAI Agents SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("orchestrator", "agents", "tools", "transcripts", "prompts")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (found,) = out.glob("rigaudit-*.whl")
    return found


def test_the_wheels_only_top_level_name_is_rigaudit(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"rigaudit"}
    for part in PARTS:
        assert f"rigaudit/{part}/__init__.py" in names
    assert "rigaudit/prompts/pcie.md" in names
    assert any(n.startswith("rigaudit/tools/data/") and n.endswith(".tar.gz") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "rigaudit = rigaudit.orchestrator.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_wheel_installs_beside_openai_agents_and_both_import(wheel: Path, tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="openai-agents is in the dev extra (pip install -e '.[dev]')")
    target = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) == ["bin", "rigaudit"]
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from agents import Agent, Runner\n"
        "import agents, rigaudit, rigaudit.agents.registry as registry\n"
        "from rigaudit.orchestrator.cli import main\n"
        "assert rigaudit.__file__.startswith(sys.argv[1]), rigaudit.__file__\n"
        "assert not agents.__file__.startswith(sys.argv[1]), agents.__file__\n"
        "assert len(registry.all_investigators()) >= 13\n"
        "assert Agent.__module__.startswith('agents.') and callable(Runner.run) and callable(main)\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", probe, str(target)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[-1] == "ok"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_every_import_of_the_project_is_written_as_rigaudit_dot_part() -> None:
    bare = []
    for part in PARTS:
        for path in (ROOT / part).rglob("*.py"):
            for name in _imports(path):
                if name.split(".")[0] in PARTS:
                    bare.append(f"{path.relative_to(ROOT)}: {name}")
    for path in (ROOT / "tests").rglob("*.py"):
        if "fixtures" in path.parts:
            continue
        for name in _imports(path):
            if name.split(".")[0] in PARTS:
                bare.append(f"{path.relative_to(ROOT)}: {name}")
    assert not bare, bare
