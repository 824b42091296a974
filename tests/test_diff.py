"""diff_findings and diff_snapshots: the library that `rigaudit diff` and `apply` (before/after) use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.tools.diffing import diff_findings, diff_snapshots
from rigaudit.tools.hosts.snapshot import SnapshotError
from rigaudit.tools.schema.finding import Finding
from tests.support.diff import DEVCTL_HIGH, GPU0_CONFIG, SEED, scratch
from tests.support.mutate import light_copy, remove_tree, set_command, set_file, set_link, set_nvml, set_unreadable

GPU7 = "/sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/0000:c2:01.0/0000:c4:00.0"


def _f(
    check: str, status: str = "ok", severity: str | None = None, observed: str = "", subjects: tuple[str, ...] = ()
) -> Finding:
    fields = {"check": check, "area": "pcie", "status": status, "severity": severity, "title": check}
    return Finding.model_validate({**fields, "observed": observed, "subjects": subjects})


def test_findings_are_matched_by_check_and_every_kind_of_change_is_named() -> None:
    a = [
        _f("a.appears"),
        _f("b.resolves", "problem", "high"),
        _f("c.unknown", "problem", "low"),
        _f("d.worse", "problem", "low"),
        _f("e.observed", "problem", "medium", "512 bytes on 8/8 GPUs"),
        _f("f.subjects", "problem", "medium", "x", ("GPU0",)),
        _f("g.same", "problem", "medium", "x"),
        _f("h.gone", "problem", "high"),
    ]
    b = [
        _f("a.appears", "problem", "critical", "now broken"),
        _f("b.resolves", "ok"),
        _f("c.unknown", "unknown"),
        _f("d.worse", "problem", "high"),
        _f("e.observed", "problem", "medium", "512 bytes on 7/8 GPUs"),
        _f("f.subjects", "problem", "medium", "x", ("GPU0", "GPU1")),
        _f("g.same", "problem", "medium", "x"),
        _f("i.new", "ok"),
    ]
    diff = diff_findings(a, b)
    kinds = {c.check: c.kind for c in diff.changes}
    assert kinds == {
        "a.appears": "appeared",
        "b.resolves": "resolved",
        "c.unknown": "status",
        "d.worse": "severity",
        "e.observed": "observed",
        "f.subjects": "observed",
        "h.gone": "only_a",
        "i.new": "only_b",
    }
    assert diff.unchanged == 1 and diff.different
    assert [c.kind for c in diff.changes][:3] == ["appeared", "resolved", "status"]  # most important first
    by_check = {c.check: c for c in diff.changes}
    assert by_check["a.appears"].detail == "ok -> problem (critical)"
    assert by_check["d.worse"].detail == "severity low -> high"
    assert "8/8 GPUs" in by_check["e.observed"].detail and "7/8 GPUs" in by_check["e.observed"].detail
    assert by_check["f.subjects"].detail == "subjects GPU0 -> GPU0, GPU1"
    assert by_check["h.gone"].after is None and by_check["i.new"].before is None
    assert diff.counts() == {"appeared": 1, "resolved": 1, "status": 1, "severity": 1, "observed": 2, "only_a": 1, "only_b": 1}
    doc = diff.to_json()
    assert doc["unchanged"] == 1 and doc["changes"][0]["b"]["severity"] == "critical"  # type: ignore[index]


def test_identical_findings_make_no_diff() -> None:
    findings = [_f("x", "problem", "high", "y"), _f("z")]
    diff = diff_findings(findings, list(reversed(findings)))
    assert not diff.different and diff.changes == () and diff.unchanged == 2


@pytest.fixture(scope="module")
def changed() -> Path:
    """The seed with one change of every kind a value diff reports."""
    root = light_copy(SEED, scratch("values") / "snap")
    set_file(root, "/proc/sys/kernel/numa_balancing", "0\n")
    config = bytearray((SEED / "files" / GPU0_CONFIG.lstrip("/")).read_bytes())
    config[DEVCTL_HIGH] = (config[DEVCTL_HIGH] & 0x8F) | 0x50
    set_file(root, GPU0_CONFIG, bytes(config))
    gpu1 = "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0/0000:04:00.0/config"
    config1 = bytearray((SEED / "files" / gpu1.lstrip("/")).read_bytes())
    config1[0x3C] ^= 0xFF  # the interrupt line: no decoded field
    set_file(root, gpu1, bytes(config1))
    remove_tree(root, GPU7)
    cpuinfo = (SEED / "files/proc/cpuinfo").read_text()
    set_file(root, "/proc/cpuinfo", cpuinfo.replace("cpu MHz\t\t: ", "cpu MHz\t\t: 1", 3))
    set_file(root, "/etc/modprobe.d/nvidia.conf", "options nvidia NVreg_EnableGpuFirmware=1\n")
    set_link(root, "/sys/bus/pci/devices/0000:00:01.1", "../../../devices/pci0000:00/0000:00:01.2")
    set_unreadable(root, "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag", "EACCES")
    set_nvml(root, "nvmlDeviceGetMaxPcieLinkGeneration", [0], 4)
    set_nvml(root, "nvmlDeviceGetEccMode", [1], error="NOT_SUPPORTED")
    set_nvml(root, "nvmlDeviceGetMemoryInfo", [0], {"total": 102641958912, "free": 1, "used": 102641958911})
    set_command(root, ["ip", "-br", "link"], "eno1np0 UP\n")
    lspci = next(line for line in (SEED / "commands.jsonl").read_text().splitlines() if '"argv": ["lspci"]' in line)
    stdout = json.loads(lspci)["stdout"]
    set_command(root, ["lspci"], stdout.replace("(rev a1)", "(rev a2)", 1) + "ff:00.0 Unassigned class\n")
    return root


def test_every_kind_of_value_change_is_found_and_described(changed: Path) -> None:
    diff = diff_snapshots(SEED, changed)
    by_ref = {c.ref: c for c in diff.changes}
    assert by_ref["file:/proc/sys/kernel/numa_balancing"].detail == "1 -> 0"
    assert by_ref[f"file:{GPU0_CONFIG}"].detail == "MaxReadReq 512 -> 4096"
    gpu1 = by_ref["file:/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0/0000:04:00.0/config"]
    assert gpu1.detail == "1 bytes differ"
    gone = by_ref[f"dir:{GPU7}"]
    assert gone.change == "only_a" and "entries below it" in gone.detail
    assert not any(c.ref.startswith(f"file:{GPU7}/") for c in diff.changes)  # folded into the folder
    new_folder = by_ref["dir:/etc/modprobe.d"]
    assert new_folder.change == "only_b" and new_folder.detail == "directory only in B (1 entry below it)"
    assert by_ref["link:/sys/bus/pci/devices/0000:00:01.1"].detail.endswith("-> ../../../devices/pci0000:00/0000:00:01.2")
    assert "unreadable (EACCES)" in by_ref["file:/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"].detail
    assert by_ref["nvml:nvmlDeviceGetMaxPcieLinkGeneration(0)"].detail == "5 -> 4"
    assert by_ref["nvml:nvmlDeviceGetEccMode(1)"].detail == "[1,1] -> NOT_SUPPORTED"
    assert by_ref["cmd:ip -br link"].change == "only_b"
    lspci = by_ref["cmd:lspci"]
    part = "[AMD] Device 14ab (rev"
    assert lspci.detail == f"stdout: @@ -1 +1 @@ -...{part} a1) +...{part} a2) (+1 more changed lines)"
    assert "+ff:00.0 Unassigned class" in lspci.diff
    memory, cpuinfo = by_ref["nvml:nvmlDeviceGetMemoryInfo(0)"], by_ref["file:/proc/cpuinfo"]
    assert memory.volatile and cpuinfo.volatile and "free" in memory.detail
    assert diff.different and set(diff.volatile) == {memory, cpuinfo}
    assert diff.changes[-2:] == tuple(sorted(diff.volatile, key=lambda c: (c.kind != "file", c.ref)))  # volatile last
    assert diff.compared > 5000
    counts = diff.counts()
    assert counts["volatile"] == 2 and counts["only_a"] >= 1 and counts["only_b"] >= 3


def test_a_snapshot_against_itself_has_no_difference() -> None:
    diff = diff_snapshots(SEED, SEED)
    assert not diff.different and diff.changes == () and diff.compared > 5000


def test_only_volatile_changes_do_not_make_snapshots_different(tmp_path: Path) -> None:
    root = light_copy(SEED, scratch("volatile") / "snap")
    set_nvml(root, "nvmlDeviceGetPowerUsage", [3], 1)
    set_nvml(root, "nvmlDeviceGetTemperature", [3, 0], 99)
    diff = diff_snapshots(SEED, root)
    assert not diff.different and len(diff.volatile) == 2


def test_a_directory_that_is_not_a_snapshot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="not a snapshot"):
        diff_snapshots(SEED, tmp_path)
