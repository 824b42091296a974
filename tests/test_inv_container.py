"""container investigator: platform, GPU device nodes, locked memory, /dev/shm."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.container import INVESTIGATOR
from rigaudit.agents.investigators.container.shm import shm_size
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_process, light_copy, remove_file, set_command, set_file, set_link

LXC = "/etc/pve/lxc/101.conf"
LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units\n"
    "Max locked memory         {0}            {0}            bytes\n"
)


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root)


def edit_lxc(root: Path, drop: str = "", add: str = "") -> None:
    lines = [line for line in (root / "files" / LXC.lstrip("/")).read_text().splitlines() if not (drop and drop in line)]
    set_file(root, LXC, "\n".join(lines) + "\n" + add)


def inside_container(root: Path, kind: str = "lxc", *, uvm: bool = True) -> None:
    set_command(root, ["systemd-detect-virt", "--container"], f"{kind}\n")
    remove_file(root, LXC)
    for node in [*(f"nvidia{i}" for i in range(8)), "nvidiactl", *(["nvidia-uvm"] if uvm else [])]:
        set_file(root, f"/dev/{node}", "")


def test_seed_proxmox_host(seed_dir: Path) -> None:
    found = audit(seed_dir)
    platform = found["container.platform"]
    assert platform.status == "ok"
    assert platform.observed.startswith("bare metal")
    assert "101 (running): 8 GPUs (/dev/nvidia0–7)" in platform.observed
    devices = found["container.gpu_devices"]
    assert devices.status == "ok"
    assert "container 101: /dev/nvidia0–7, nvidiactl, nvidia-uvm passed in" in devices.observed
    assert "c 509:* (nvidia-uvm)" in devices.observed
    assert found["container.memlock"].status == "ok"
    assert "lxc.prlimit.memlock unlimited" in found["container.memlock"].observed
    shm = found["container.shm"]
    assert shm.status == "unknown" and shm.observed.startswith("measure inside container 101")


def test_missing_uvm_mount_is_high(snap: Path) -> None:
    edit_lxc(snap, drop="/dev/nvidia-uvm dev/nvidia-uvm ")
    finding = audit(snap)["container.gpu_devices"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "container 101: /dev/nvidia-uvm not passed in" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container_config")
    descriptions = [a.description for a in finding.fix.actions if isinstance(a, CommandAction)]
    assert any("lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm" in d for d in descriptions)
    assert finding.fix.actions[-1].argv == ("pct", "reboot", "101")  # type: ignore[union-attr]


def test_missing_gpu_is_medium(snap: Path) -> None:
    edit_lxc(snap, drop="/dev/nvidia7 ")
    finding = audit(snap)["container.gpu_devices"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "/dev/nvidia7 not passed in" in finding.observed


def test_uvm_major_not_allowed_by_cgroup(snap: Path) -> None:
    edit_lxc(snap, drop="c 509:*")
    finding = audit(snap)["container.gpu_devices"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "cgroup does not allow /dev/nvidia-uvm" in finding.observed


def test_memlock_not_set_is_medium_restart_with_rdma_low_without(snap: Path) -> None:
    edit_lxc(snap, drop="lxc.prlimit.memlock")
    assert audit(snap)["container.memlock"].severity == "low"  # no RDMA NIC: little registers memory
    set_file(snap, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")
    finding = audit(snap)["container.memlock"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "not set" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container_config")
    assert any("lxc.prlimit.memlock: unlimited" in a.description for a in finding.fix.actions)  # type: ignore[union-attr]


def test_memlock_limited_value(snap: Path) -> None:
    edit_lxc(snap, drop="lxc.prlimit.memlock", add="lxc.prlimit.memlock: 65536\n")
    finding = audit(snap)["container.memlock"]
    assert finding.status == "problem" and "65536" in finding.observed


def test_plain_bare_metal_has_nothing_to_judge(snap: Path) -> None:
    remove_file(snap, LXC)
    found = audit(snap)
    assert found["container.platform"].status == "ok"
    assert "Proxmox" not in found["container.platform"].observed
    for check in ("container.gpu_devices", "container.memlock", "container.shm"):
        assert found[check].status == "not_applicable", check


def test_inside_container_without_uvm(snap: Path) -> None:
    inside_container(snap, uvm=False)
    found = audit(snap)
    assert found["container.platform"].observed.startswith("lxc")
    devices = found["container.gpu_devices"]
    assert (devices.status, devices.severity) == ("problem", "high")
    assert "/dev/nvidia-uvm missing" in devices.observed


def test_inside_container_with_every_node(snap: Path) -> None:
    inside_container(snap)
    set_file(snap, "/proc/self/limits", LIMITS.format("unlimited"))
    set_file(snap, "/proc/mounts", "shm /dev/shm tmpfs rw,nosuid,nodev,size=16777216k 0 0\n")
    found = audit(snap)
    assert found["container.gpu_devices"].status == "ok"
    assert found["container.gpu_devices"].observed == "/dev/nvidia0–7, nvidiactl, nvidia-uvm present"
    assert found["container.memlock"].status == "ok"
    assert found["container.shm"].status == "ok" and "16384 MiB" in found["container.shm"].observed


def test_inside_docker_small_shm_and_memlock(snap: Path) -> None:
    inside_container(snap, kind="docker")
    set_file(snap, "/proc/self/limits", LIMITS.format("8388608"))
    set_file(snap, "/proc/mounts", "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n")
    found = audit(snap)
    memlock = found["container.memlock"]
    assert (memlock.status, memlock.severity) == ("problem", "low")  # no RDMA NIC here
    assert "8388608" in memlock.observed
    shm = found["container.shm"]
    assert (shm.status, shm.severity) == ("problem", "high")  # 8 GPUs in the container: NCCL needs /dev/shm
    assert "64 MiB" in shm.observed
    assert shm.fix is not None and "--shm-size" in shm.fix.summary and shm.fix.where == "container_config"


def test_server_in_lxc_container_seen_from_host(snap: Path) -> None:
    set_link(snap, "/proc/self/ns/mnt", "mnt:[4026531841]")
    add_process(
        snap,
        7000,
        ["python3", "-m", "sglang.launch_server"],
        cgroup="0::/lxc/101/ns/init.scope\n",
        mnt_ns="mnt:[4026532999]",
        files={"mounts": "tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n", "limits": LIMITS.format("unlimited")},
    )
    found = audit(snap)
    shm = found["container.shm"]
    assert (shm.status, shm.severity) == ("problem", "high")  # container 101 is given 8 GPUs
    assert "pid 7000 (sglang in lxc 101): 64 MiB" in shm.observed
    assert found["container.memlock"].status == "ok"


def test_shm_size_parsing() -> None:
    assert shm_size("shm /dev/shm tmpfs rw,size=2g 0 0") == ("rw,size=2g", 2 * 2**30)
    assert shm_size("tmpfs /dev/shm tmpfs rw,nosuid 0 0") == ("rw,nosuid", None)
    assert shm_size("proc /proc proc rw 0 0") is None
