"""`rigaudit diff`: a headline of the host facts that changed, processes apart, alike changes folded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.diffing import ValueChange, fold_changes, headline
from rigaudit.tools.diffing._volatile import volatile_file
from rigaudit.tools.schema.finding import Finding
from tests.conftest import FIXTURES


def _links(status: str) -> Finding:
    return Finding(check="nvlink.links", area="nvlink", status=status, title="NVLink links", observed="x")  # type: ignore[arg-type]


def test_headline_names_gpus_nvlink_driver_and_kernel_first() -> None:
    a = {"gpus": "1 x NVIDIA H200", "driver": "570.86", "kernel": "6.8.0", "host_id": "machine-id:1", "memory": "1 GiB"}
    b = {"gpus": "2 x NVIDIA H200", "driver": "580.95", "kernel": "6.8.0", "host_id": "machine-id:2", "memory": "1 GiB"}
    lines = headline(a, b, [_links("not_applicable")], [_links("ok")])
    assert lines == ["GPUs 1 -> 2 (1 x NVIDIA H200 -> 2 x NVIDIA H200)", "NVLink appeared", "driver 570.86 -> 580.95"]
    assert headline(a, a, [], []) == []


def test_processes_are_apart_and_alike_changes_fold() -> None:
    assert volatile_file("/proc/4242/comm") and volatile_file("/proc/self") and not volatile_file("/proc/cmdline")
    changes = [
        ValueChange("nvml", f"nvml:nvmlDeviceGet{fn}(1)", "only_b", "recorded only in B") for fn in ("Name", "Uuid", "Serial")
    ]
    changes += [ValueChange("file", f"file:/sys/devices/system/cpu/cpu{n}", "only_b", "a file, only in B") for n in range(16, 32)]
    changes.append(ValueChange("nvml", "nvml:nvmlDeviceGetCount()", "changed", "1 -> 2"))
    folded = fold_changes(changes)
    assert [(c.ref, c.detail) for c in folded] == [
        ("nvml: GPU 1's calls", "3 alike: recorded only in B"),
        ("file:/sys/devices/system/cpu/cpu*", "16 alike: only in B"),
        ("nvml:nvmlDeviceGetCount()", "1 -> 2"),
    ]


@pytest.mark.slow
def test_diff_of_one_and_two_gpus_leads_with_what_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "d.json"
    code = main(["diff", str(FIXTURES / "h200x1-vm"), str(FIXTURES / "h200x2-vm"), "--json", str(out_json)])
    assert code == 1
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert flat.index("What changed: GPUs 1 -> 2") < flat.index("Findings that changed")
    assert "NVLink appeared" in flat
    assert "/proc/PID entries of processes" in flat
    document = json.loads(out_json.read_text())
    assert document["headline"][:2] == ["GPUs 1 -> 2 (1 x NVIDIA H200 -> 2 x NVIDIA H200)", "NVLink appeared"]
    stable = [c["ref"] for c in document["values"]["changes"] if not c.get("volatile")]
    assert not any(ref.startswith(("file:/proc/1", "file:/proc/2", "link:/proc/self")) for ref in stable)
