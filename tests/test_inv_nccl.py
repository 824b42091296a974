"""nccl.version: the NCCL the server loads against the one its torch wheel pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.facts.python_env import dist_version, required_version
from rigaudit.agents.investigators.nccl import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_dir, add_process, light_copy, set_file, set_link

SITE = "/opt/venv/lib/python3.12/site-packages"
ROOT = "/proc/5000/root"
METADATA = (
    "Metadata-Version: 2.1\nName: torch\nVersion: 2.8.0+cu128\n"
    'Requires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"\n'
    'Requires-Dist: nvidia-nccl-cu12==2.27.3; platform_system == "Linux"\n'
)


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)["nccl.version"]


def server(root: Path, nccl_map: str, wheel: str = "2.27.3") -> None:
    set_link(root, "/proc/self/ns/mnt", "mnt:[4026531841]")
    maps = f"7f00 r-xp 0 00:2f 1 {SITE}/torch/lib/libtorch_cuda.so\n7f10 r-xp 0 00:2f 2 {nccl_map}\n"
    add_process(
        root,
        5000,
        ["/opt/venv/bin/python3", "-m", "vllm.entrypoints.openai.api_server"],
        cgroup="0::/lxc/101/ns/init.scope\n",
        mnt_ns="mnt:[4026532999]",
        files={"maps": maps},
    )
    set_file(root, f"{ROOT}{SITE}/torch/version.py", "__version__ = '2.8.0+cu128'\ncuda: Optional[str] = '12.8'\n")
    set_file(root, f"{ROOT}{SITE}/torch-2.8.0+cu128.dist-info/METADATA", METADATA)
    add_dir(root, f"{ROOT}{SITE}/nvidia_nccl_cu12-{wheel}.dist-info")


def test_metadata_helpers() -> None:
    assert required_version(METADATA, "nvidia-nccl-cu12") == "2.27.3"
    assert required_version(METADATA, "nvidia-nccl-cu13") is None
    assert dist_version(("torch", "nvidia_nccl_cu12-2.27.3.dist-info"), "nvidia_nccl_cu12") == (
        "nvidia_nccl_cu12-2.27.3.dist-info",
        "2.27.3",
    )


def test_seed_has_no_serving_python(seed_dir: Path) -> None:
    finding = audit(seed_dir)
    assert finding.status == "unknown" and finding.observed.startswith("no serving Python with torch found")


def test_older_system_nccl_loaded_is_medium(snap: Path) -> None:
    server(snap, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5")
    finding = audit(snap)
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed == ("torch 2.8.0+cu128 pins NCCL 2.27.3; loaded 2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5)")
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")


def test_wheel_of_another_version_is_flagged(snap: Path) -> None:
    server(snap, f"{SITE}/nvidia/nccl/lib/libnccl.so.2", wheel="2.28.1")
    finding = audit(snap)
    assert (finding.status, finding.severity) == ("problem", "low")
    assert "pins NCCL 2.27.3; loaded 2.28.1" in finding.observed


def test_the_pinned_wheel_loaded_is_ok(snap: Path) -> None:
    server(snap, f"{SITE}/nvidia/nccl/lib/libnccl.so.2")
    finding = audit(snap)
    assert finding.status == "ok"
    assert finding.observed == (
        f"torch 2.8.0+cu128 pins NCCL 2.27.3, wheel 2.27.3, server loads {SITE}/nvidia/nccl/lib/libnccl.so.2"
    )
