"""container.cgroup_cpu: CPU quota and CPU count of the serving container."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.container import INVESTIGATOR
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, set_command, set_file

CONF = "/etc/pve/lxc/101.conf"


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def cgroup_cpu(root: Path) -> Finding:
    return audit_snapshot(INVESTIGATOR, root)["container.cgroup_cpu"]


def edit_conf(root: Path, old: str, new: str) -> None:
    text = (root / f"files{CONF}").read_text()
    assert old in text
    set_file(root, CONF, text.replace(old, new))


def test_seed_container_has_cpus_and_no_quota(seed_dir: Path) -> None:
    finding = cgroup_cpu(seed_dir)
    assert finding.status == "ok"
    assert finding.observed == "container 101: 96 CPUs for 8 GPUs, no CPU quota"
    assert finding.evidence == ("file:/etc/pve/lxc/101.conf",)


def test_cpu_quota_is_medium(snap: Path) -> None:
    edit_conf(snap, "cores: 96\n", "cores: 96\ncpulimit: 16\n")
    finding = cgroup_cpu(snap)
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert finding.observed == "container 101: CPU quota of 16 CPUs"
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container_config")
    assert finding.fix.actions[-1].model_dump()["argv"] == ("pct", "reboot", "101")


@pytest.mark.parametrize(("cores", "severity"), [(8, "medium"), (12, "low")])
def test_too_few_cpus_for_the_gpus(snap: Path, cores: int, severity: str) -> None:
    edit_conf(snap, "cores: 96\n", f"cores: {cores}\n")
    finding = cgroup_cpu(snap)
    assert (finding.status, finding.severity) == ("problem", severity)
    assert finding.observed == f"container 101: {cores} CPUs for 8 GPUs"


def test_quota_seen_from_inside_a_container(snap: Path) -> None:
    set_command(snap, ["systemd-detect-virt", "--container"], "lxc\n")
    set_file(snap, "/sys/fs/cgroup/cpu.max", "400000 100000\n")
    set_file(snap, "/sys/fs/cgroup/cpu.stat", "usage_usec 10\nnr_periods 1000\nnr_throttled 120\nthrottled_usec 5\n")
    finding = cgroup_cpu(snap)
    assert (finding.status, finding.severity) == ("problem", "high")  # 12% of periods throttled, 4 CPUs for 8 GPUs
    assert "this container: CPU quota of 4 CPUs, throttled in 120 of 1000 periods (12.0%)" in finding.observed
    set_file(snap, "/sys/fs/cgroup/cpu.max", "1600000 100000\n")
    set_file(snap, "/sys/fs/cgroup/cpu.stat", "usage_usec 10\nnr_periods 1000\nnr_throttled 0\nthrottled_usec 0\n")
    finding = cgroup_cpu(snap)
    assert finding.status == "ok" and "not enough throttling to cost anything" in finding.observed  # never hit


def test_no_quota_inside_a_container_is_ok(snap: Path) -> None:
    set_command(snap, ["systemd-detect-virt", "--container"], "lxc\n")
    set_file(snap, "/sys/fs/cgroup/cpu.max", "max 100000\n")
    finding = cgroup_cpu(snap)
    assert finding.status == "ok" and "this container: all CPUs for 8 GPUs, no CPU quota" in finding.observed


def test_cgroup_v1_quota_inside_a_container(snap: Path) -> None:
    set_command(snap, ["systemd-detect-virt", "--container"], "docker\n")
    set_file(snap, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n")
    set_file(snap, "/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    finding = cgroup_cpu(snap)
    assert finding.status == "problem" and "this container: CPU quota of 2 CPUs" in finding.observed
    assert "file:/sys/fs/cgroup/cpu/cpu.cfs_quota_us" in finding.evidence
