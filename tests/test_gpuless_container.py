"""A container with no GPU at all (a CI runner, a laptop's docker): the audit invents no problem."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost

CPUINFO = "".join(
    f"processor\t: {i}\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
    f"physical id\t: 0\nflags\t\t: fpu hypervisor\n\n"
    for i in range(2)
)
LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units\n"
    "Max locked memory         8388608              8388608              bytes\n"
)


def _snapshot(root: Path) -> Path:
    files = {
        "proc/cpuinfo": CPUINFO,
        "proc/self/limits": LIMITS,
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/vda ro\n",
        "proc/sys/kernel/osrelease": "6.8.0\n",
        "proc/sys/kernel/numa_balancing": "0\n",
        "proc/mounts": "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n",
        "proc/modules": "",
        "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
        "proc/meminfo": "MemTotal:       24000000 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n",
    }
    for path, text in files.items():
        target = root / "files" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": "ci-runner"}))
    (root / "dirs.json").write_text(json.dumps(["/sys/bus/pci/devices", "/sys/devices/system/node/node0"]))
    (root / "nvml.jsonl").write_text(json.dumps({"fn": "nvmlInit", "args": [], "error": "LIBRARY_NOT_FOUND"}) + "\n")
    commands = [
        {"argv": ["systemd-detect-virt", "--container"], "exit_code": 0, "stdout": "docker\n"},
        {"argv": ["systemd-detect-virt", "--vm"], "exit_code": 0, "stdout": "kvm\n"},
        {
            "argv": ["dmesg"],
            "any_args": True,
            "exit_code": 1,
            "stderr": "dmesg: read kernel buffer failed: Operation not permitted",
        },
    ]
    (root / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
    return root


def test_no_gpu_no_invented_problem(tmp_path: Path) -> None:
    result = anyio.run(lambda: run_audit(SnapshotHost(_snapshot(tmp_path / "snap"))))
    problems = [f"{f.check}: {f.observed}" for f in result.findings if f.status == "problem"]
    assert problems == []
    by_check = {f.check: f for f in result.findings}
    assert by_check["container.gpu_devices"].status == "not_applicable"
    assert by_check["container.memlock"].status == "not_applicable"
    assert by_check["driver.confidential_computing"].status == "not_applicable"  # no GPU: no CC state to read
    # Docker inside a KVM guest: CPPC is the hypervisor's firmware, not this machine's.
    assert by_check["firmware.cppc"].status == "not_applicable"
    assert all(r.status == "done" for r in result.investigators)
