"""benchmarks/device_run.py, what the H200 scripts share, checked on CPU: standard library only, the wheelhouse
unpacked only when needed, a server waited for until it says it serves, stopped (killed if it must be)."""

from __future__ import annotations

import ast
import importlib.util
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = ("explain_h200.py", "bench_stats_h200.py")
SHARED = {"_deps", "free_port", "machine"}
"""What each script used to define for itself."""


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


run = _load("device_run")


def _top_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_it_imports_the_standard_library_only() -> None:
    imported = _top_imports(BENCHMARKS / "device_run.py") - {"__future__"}
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


@pytest.mark.parametrize("script", SCRIPTS)
def test_both_scripts_share_it_instead_of_their_own_copies(script: str) -> None:
    path = BENCHMARKS / script
    tree = ast.parse(path.read_text())
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert not defined & SHARED, defined & SHARED
    assert _top_imports(path) - {"__future__", "device_run"} <= set(sys.stdlib_module_names)  # no rigaudit at the top
    assert "device_run" in _top_imports(path) and "zipfile" not in path.read_text()


def test_no_wheel_is_unpacked_when_the_dependencies_import(tmp_path: Path) -> None:
    assert run.dependencies(tmp_path) == []  # this interpreter has pydantic, anyio and rich


def test_missing_dependencies_come_from_the_wheels(tmp_path: Path) -> None:
    wheels = tmp_path / "whl"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "lonely-1.0-py3-none-any.whl", "w") as archive:
        archive.writestr("lonely_dep_for_device_run.py", "ANSWER = 42\n")
    site = run.dependencies(wheels, modules=("lonely_dep_for_device_run",))
    assert len(site) == 1 and (Path(site[0]) / "lonely_dep_for_device_run.py").is_file()
    env = run.environment(site, tmp_path / "state", base={"PATH": os.environ.get("PATH", "")})
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [site[0], str(run.ROOT)]
    assert env["XDG_STATE_HOME"] == str(tmp_path / "state")
    probe = [sys.executable, "-c", "import lonely_dep_for_device_run as m; print(m.ANSWER)"]
    assert subprocess.run(probe, env=env, capture_output=True, text=True, check=True).stdout.strip() == "42"


def test_no_wheels_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no wheels in"):
        run.dependencies(tmp_path, modules=("no_such_module_for_device_run",))
    (tmp_path / "bad-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    with pytest.raises(SystemExit, match=r"cannot unpack bad-1\.0"):
        run.dependencies(tmp_path, modules=("no_such_module_for_device_run",))


def _server(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "server.py"
    script.write_text("import signal, sys, time\n" + body)
    return [sys.executable, str(script)]


def test_a_server_is_waited_for_until_it_says_it_serves_then_stopped(tmp_path: Path) -> None:
    port = run.free_port()
    argv = _server(tmp_path, "print('loading', flush=True)\nprint('ready on 127.0.0.1', flush=True)\ntime.sleep(120)\n")
    server = run.start_server(argv, log=tmp_path / "s.log", port=port, env=dict(os.environ))
    assert server.url == f"http://127.0.0.1:{port}" and server.proc.poll() is None and server.started_s >= 0
    server.stop()
    assert server.proc.returncode is not None and server.proc.returncode != 0  # terminated
    server.stop()  # twice is harmless


def test_a_server_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    body = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('listening on x', flush=True)\ntime.sleep(120)\n"
    server = run.start_server(_server(tmp_path, body), log=tmp_path / "s.log", port=1, env=dict(os.environ))
    server.stop(timeout_s=0.5)
    assert server.proc.returncode == -9


def test_a_server_that_exits_or_never_serves_is_one_error_naming_its_log(tmp_path: Path) -> None:
    dead = _server(tmp_path, "print('Traceback: no torch', flush=True)\nsys.exit(3)\n")
    with pytest.raises(run.ServerDown, match=r"exited \(3\) before it was ready; see dead.log"):
        run.start_server(dead, log=tmp_path / "dead.log", port=1, env=dict(os.environ))
    mute = tmp_path / "mute"
    mute.mkdir()
    with pytest.raises(run.ServerDown, match=r"not ready within 0\.3 s; see mute\.log") as caught:
        run.start_server(
            _server(mute, "time.sleep(120)\n"), log=tmp_path / "mute.log", port=1, env=dict(os.environ), timeout_s=0.3
        )
    assert isinstance(caught.value, RuntimeError)


def test_rigaudit_runs_from_the_repository_and_an_overrun_is_exit_124(tmp_path: Path) -> None:
    env = run.environment([], tmp_path / "state")
    done = run.rigaudit(["--version"], env=env)
    assert done.returncode == 0 and "rigaudit" in (done.stdout + done.stderr)
    slow = run.rigaudit(["--version"], env=env, timeout_s=0.001)
    assert slow.returncode == 124 and "timed out" in slow.stderr


def test_a_free_port_can_be_bound_and_the_machine_is_one_line() -> None:
    port = run.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert "\n" not in run.machine() and run.machine()
