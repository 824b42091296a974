"""``--expect FILE``: the fleet's expected values, parsed strictly and judged on fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.expect import KEYS, MAX_FILE_BYTES, parse_expectations
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.check import CheckResult
from tests.support.fleet import degrade_link
from tests.support.mutate import light_copy, remove_file, remove_nvml, set_nvml

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"
H200 = FIXTURES / "h200x2-vm"
SEED_FLEET = """
# the seed's fleet: every node as the seed is
driver = 580.95.*
gpus = 8
pcie_width = 16       # x16 everywhere
pcie_gen: gen5
gpu_model = "NVIDIA RTX PRO 6000*"
vbios = '98.02.*'
kernel = 6.8.12-*
cuda = 13.0
"""


def judged(tmp_path: Path, root: Path, text: str, *extra: str) -> tuple[int, CheckResult]:
    expect = tmp_path / "expect.conf"
    expect.write_text(text)
    out = tmp_path / "result.json"
    code = main(["check", "--snapshot", str(root), "--only", "expect", "--expect", str(expect), "--json", str(out), *extra])
    return code, CheckResult.model_validate_json(out.read_text())


def statuses(result: CheckResult) -> dict[str, str]:
    return {c.check: c.status for c in result.checks}


def test_the_file_format() -> None:
    parsed = parse_expectations(SEED_FLEET)
    assert parsed.values == {
        "driver": "580.95.*",
        "gpus": 8,
        "pcie_width": 16,
        "pcie_gen": 5,
        "gpu_model": "NVIDIA RTX PRO 6000*",
        "vbios": "98.02.*",
        "kernel": "6.8.12-*",
        "cuda": "13.0",
    }
    assert [c.id for c in parsed.checks] == [f"expect.{k}" for k in KEYS]
    assert parse_expectations("gpu_model = A#1 # comment").values == {"gpu_model": "A#1"}
    assert parse_expectations("pcie_width = x8").values == {"pcie_width": 8}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("drivr = 1", "unknown key 'drivr'"),
        ("gpus = eight", "gpus needs a whole number"),
        ("pcie_gen = 9", "pcie_gen = 9 is out of range"),
        ("gpus = -1", "out of range"),
        ("gpus = 8\ngpus = 4", ":2: gpus is given twice"),
        ("driver =", "driver has no value"),
        ("just words", ":1: expected `key = value`"),
        ("# nothing\n\n", "names no expectation"),
    ],
)
def test_bad_files_are_usage_errors_naming_the_line(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=None) as raised:
        parse_expectations(text, "expect.conf")
    assert said in str(raised.value)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"gpus = 8\n" + b"#" * MAX_FILE_BYTES, "larger than 64 KiB"),
        (b"gpus = \xff\n", "not UTF-8"),
    ],
)
def test_unreadable_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, said: str) -> None:
    path = tmp_path / "expect.conf"
    path.write_bytes(content)
    assert main(["check", "--snapshot", str(H200), "--expect", str(path)]) == 2
    assert said in capsys.readouterr().err
    assert main(["check", "--snapshot", str(H200), "--expect", str(tmp_path)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_node_as_the_fleet_expects_is_healthy(tmp_path: Path) -> None:
    code, result = judged(tmp_path, SEED, SEED_FLEET)
    assert code == 0
    assert set(statuses(result).values()) == {"ok"}


def test_every_expectation_that_does_not_hold_is_a_problem(tmp_path: Path) -> None:
    other = "driver = 575.*\ngpus = 4\npcie_gen = 6\ngpu_model = NVIDIA H100*\nvbios = 96.*\nkernel = 6.11.*\ncuda = 12.*\n"
    code, result = judged(tmp_path, SEED, other)
    assert code == 1
    assert set(statuses(result).values()) == {"problem"}
    severity = {c.check: c.severity for c in result.checks}
    assert severity["expect.gpus"] == "critical" and severity["expect.driver"] == "high"
    assert result.reason.startswith("expect.gpus critical, ")
    assert "8 GPU(s) (expected 4)" in result.reason


def test_a_narrow_link_fails_the_width_expectation(tmp_path: Path) -> None:
    root = light_copy(SEED, tmp_path / "narrow")
    degrade_link(root)
    code, result = judged(tmp_path, root, "pcie_width = 16\n")
    assert code == 1
    [gpu3] = [c for c in result.checks]
    assert gpu3.observed == "GPU3 (0000:44:00.0) x8 (expected x16+)"


def test_a_missing_gpu_is_critical(tmp_path: Path) -> None:
    root = light_copy(SEED, tmp_path / "seven")
    set_nvml(root, "nvmlDeviceGetCount", [], 7)
    assert judged(tmp_path, root, "gpus = 8\n", "--fail-on", "critical")[0] == 1


def test_no_driver_is_a_problem_but_a_snapshot_without_nvml_is_unknown(tmp_path: Path) -> None:
    root = light_copy(SEED, tmp_path / "nodriver")
    set_nvml(root, "nvmlInit", [], error="DRIVER_NOT_LOADED")
    assert judged(tmp_path, root, "driver = 580.95.05\n")[0] == 0  # the loaded module still tells
    remove_file(root, SnapshotHost(root).resolve("/sys/module/nvidia/version"))
    code, result = judged(tmp_path, root, "driver = 580.95.05\n")
    assert code == 1 and "no usable NVIDIA driver (NVML: DRIVER_NOT_LOADED" in result.reason
    unrecorded = light_copy(SEED, tmp_path / "unrecorded")
    remove_nvml(unrecorded, "nvmlInit")
    remove_file(unrecorded, SnapshotHost(unrecorded).resolve("/sys/module/nvidia/version"))
    code, result = judged(tmp_path, unrecorded, "driver = 580.95.05\n")
    assert code == 3 and result.reason.startswith("could not check: expect.driver (driver version not readable")


def test_an_expectation_that_cannot_be_read_is_could_not_check(tmp_path: Path) -> None:
    code, result = judged(tmp_path, H200, "cuda = 13.0\ngpus = 2\n")
    assert code == 3
    assert statuses(result) == {"expect.gpus": "ok", "expect.cuda": "unknown"}
    assert result.reason == "could not check: expect.cuda (CUDA driver version not readable (NVML: NOT_RECORDED))"


def test_expectations_run_with_the_other_checks_and_can_be_skipped(tmp_path: Path) -> None:
    expect = tmp_path / "e.conf"
    expect.write_text("gpus = 4\n")
    assert main(["check", "--snapshot", str(H200), "--expect", str(expect)]) == 1
    assert main(["check", "--snapshot", str(H200), "--expect", str(expect), "--skip", "expect.gpus"]) == 0
