"""runtime investigator: torch build vs GPU architecture, debug variables in the server's environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.facts.python_env import parse_torch_version
from rigaudit.agents.investigators.runtime import INVESTIGATOR
from rigaudit.agents.investigators.runtime.debug_env import debug_variables
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_process, light_copy, set_file, set_link, set_unreadable

SITE = "/opt/venv/lib/python3.12/site-packages"
MAPS = f"7f2a1c000000-7f2a1e000000 r-xp 00000000 00:2f 1234 {SITE}/torch/lib/libtorch_cuda.so\n"


def version_py(version: str, cuda: str | None) -> str:
    cuda_text = f"'{cuda}'" if cuda else "None"
    return (
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda_text}\nhip: Optional[str] = None\n"
    )


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root)


def container_server(root: Path, cuda: str | None, environ: dict[str, str] | None = None) -> None:
    """An sglang server in LXC 101 seen from the host: torch found through its memory maps and /proc/PID/root."""
    set_link(root, "/proc/self/ns/mnt", "mnt:[4026531841]")
    add_process(
        root,
        5000,
        ["/opt/venv/bin/python3", "-m", "sglang.launch_server", "--tp", "8"],
        cgroup="0::/lxc/101/ns/init.scope\n",
        mnt_ns="mnt:[4026532999]",
        files={"maps": MAPS},
        environ=environ if environ is not None else {"PATH": "/usr/bin", "HOME": "/root"},
    )
    set_file(root, f"/proc/5000/root{SITE}/torch/version.py", version_py("2.8.0+cu128" if cuda else "2.8.0+cpu", cuda))


def test_seed_has_no_visible_server(seed_dir: Path) -> None:
    found = audit(seed_dir)
    torch = found["runtime.torch_cuda"]
    assert torch.status == "unknown"
    assert torch.observed.startswith("no serving Python found on this host")
    assert "LXC container 101" in torch.observed
    env = found["runtime.env"]
    assert env.status == "unknown" and "no inference server process found" in env.observed


def test_torch_cuda_new_enough_is_ok(snap: Path) -> None:
    container_server(snap, "12.8")
    finding = audit(snap)["runtime.torch_cuda"]
    assert finding.status == "ok"
    assert f"torch 2.8.0+cu128 (CUDA 12.8) at {SITE} used by pid 5000 (sglang in lxc 101)" in finding.observed
    assert "sm_120 need CUDA ≥ 12.8" in finding.observed and "arch list unknown" in finding.observed
    assert f"file:/proc/5000/root{SITE}/torch/version.py" in finding.evidence


def test_torch_cuda_too_old_for_blackwell_is_high(snap: Path) -> None:
    container_server(snap, "12.6")
    finding = audit(snap)["runtime.torch_cuda"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")
    assert "cu128" in finding.fix.actions[0].description  # type: ignore[union-attr]


def test_cpu_only_torch_is_a_problem(snap: Path) -> None:
    container_server(snap, None)
    finding = audit(snap)["runtime.torch_cuda"]
    assert finding.status == "problem" and "CPU-only" in finding.observed


def test_interpreter_path_is_used_without_maps(snap: Path) -> None:
    set_link(snap, "/proc/self/ns/mnt", "mnt:[4026531841]")
    add_process(snap, 5100, ["/opt/env/bin/python3", "-m", "vllm.entrypoints.openai.api_server"], mnt_ns="mnt:[4026531841]")
    set_file(snap, "/opt/env/lib/python3.11/site-packages/torch/version.py", version_py("2.7.1+cu128", "12.8"))
    finding = audit(snap)["runtime.torch_cuda"]
    assert finding.status == "ok" and "pid 5100 (vllm)" in finding.observed


def test_system_torch_without_server_is_only_low(snap: Path) -> None:
    set_file(snap, "/usr/lib/python3.12/site-packages/torch/version.py", version_py("2.3.0+cu121", "12.1"))
    finding = audit(snap)["runtime.torch_cuda"]
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "confirm it is the one serving" in finding.explanation


def test_launch_blocking_in_server_env_is_medium(snap: Path) -> None:
    container_server(snap, "12.8", environ={"CUDA_LAUNCH_BLOCKING": "1", "NSYS_PROFILING_SESSION_ID": "3", "PATH": "/bin"})
    finding = audit(snap)["runtime.env"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "CUDA_LAUNCH_BLOCKING=1" in finding.observed and "NSYS_PROFILING_SESSION_ID" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")


def test_clean_server_env_is_ok(snap: Path) -> None:
    container_server(snap, "12.8")
    finding = audit(snap)["runtime.env"]
    assert finding.status == "ok" and "1 server processes" in finding.observed


def test_unreadable_environ_is_unknown(snap: Path) -> None:
    container_server(snap, "12.8")
    (snap / "files/proc/5000/environ").unlink()
    set_unreadable(snap, "/proc/5000/environ", "EACCES")
    finding = audit(snap)["runtime.env"]
    assert finding.status == "unknown" and "EACCES" in finding.observed


def test_parsers() -> None:
    assert parse_torch_version(version_py("2.9.0+cu130", "13.0")) == ("2.9.0+cu130", "13.0")
    assert parse_torch_version("__version__ = '2.1.0'\ncuda = None\n") == ("2.1.0", None)
    assert debug_variables({"CUDA_LAUNCH_BLOCKING": "0", "PATH": "/bin"}) == []
    assert debug_variables({"CUDA_INJECTION64_PATH": "/opt/nsys/libToolsInjection64.so"}) == [
        "CUDA_INJECTION64_PATH=/opt/nsys/libToolsInjection64.so"
    ]


def test_server_without_torch_says_so(snap: Path) -> None:
    add_process(snap, 5200, ["llama-server", "-m", "/models/x.gguf"])
    finding = audit(snap)["runtime.torch_cuda"]
    assert finding.status == "unknown"
    assert finding.observed.startswith("torch not found for the server (pid 5200 (llama-server)")
