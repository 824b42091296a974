"""The firmware investigator on the seed and on mutated copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.investigators.firmware import INVESTIGATOR
from rigaudit.agents.investigators.firmware.facts import parse_cpuinfo
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci.sysfs import config_path
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, remove_tree, set_command, set_file, set_nvml

MiB = 1 << 20
VRAM = 102641958912


@pytest.fixture
def seed(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "seed")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True, problem_has_fix=True)


def _small_bar1(root: Path, *, largest_mib: int) -> None:
    """BAR1 at 256 MiB on every GPU (NVML and the Resizable BAR control), supporting up to ``largest_mib``."""
    host = SnapshotHost(root)
    for index in range(8):
        set_nvml(
            root, "nvmlDeviceGetBAR1MemoryInfo", [index], {"bar1Total": 256 * MiB, "bar1Free": 250 * MiB, "bar1Used": 6 * MiB}
        )
    for bdf in ("0000:03:00.0", "0000:04:00.0", "0000:43:00.0", "0000:44:00.0", "0000:83:00.0", "0000:84:00.0",
                "0000:c3:00.0", "0000:c4:00.0"):  # fmt: skip
        path = host.resolve(config_path(bdf))
        data = bytearray((root / "files" / path.lstrip("/")).read_bytes())
        supported = sum(1 << bit for bit in range(4, 4 + largest_mib.bit_length()))
        data[0x164:0x168] = supported.to_bytes(4, "little")
        data[0x169] = 8  # current size 2^8 MiB
        set_file(root, path, bytes(data))


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert all(f.status == "ok" for f in found.values()), [(f.check, f.status) for f in found.values()]
    assert found["firmware.rebar"].observed.startswith("BAR1 128 GiB on 8/8 GPUs (VRAM 95.6 GiB)")
    assert "largest supported size on 8/8" in found["firmware.rebar"].observed
    assert "98.02.5A.00.01 on 8 GPUs" in found["firmware.vbios_consistency"].observed
    assert "acpi_cppc present" in found["firmware.cppc"].observed


def test_small_bar1_that_could_grow(seed: Path) -> None:
    _small_bar1(seed, largest_mib=128 * 1024)
    rebar = audit(seed)["firmware.rebar"]
    assert (rebar.status, rebar.severity) == ("problem", "medium")
    assert len(rebar.subjects) == 8 and "BAR1 256 MiB vs VRAM 95.6 GiB" in rebar.observed
    assert "Resizable BAR supports a larger BAR1 on 8" in rebar.observed
    assert rebar.fix is not None and rebar.fix.kind == "firmware" and "Above 4G" in rebar.fix.summary


def test_small_bar1_at_the_products_limit_is_ok(seed: Path) -> None:
    _small_bar1(seed, largest_mib=256)
    rebar = audit(seed)["firmware.rebar"]
    assert rebar.status == "ok" and "largest size it supports" in rebar.observed


def test_bar1_without_nvml_comes_from_sysfs_resource(seed: Path) -> None:
    set_nvml(seed, "nvmlInit", [], error="LIBRARY_NOT_FOUND")
    rebar = audit(seed)["firmware.rebar"]
    assert rebar.status == "ok" and rebar.observed.startswith("BAR1 128 GiB on 8/8 GPUs;")
    assert any(ref.endswith("/resource") for ref in rebar.evidence)


def test_vbios_mismatch(seed: Path) -> None:
    set_nvml(seed, "nvmlDeviceGetVbiosVersion", [5], "98.02.4B.00.02")
    vbios = audit(seed)["firmware.vbios_consistency"]
    assert (vbios.status, vbios.severity) == ("problem", "low")
    assert "98.02.4B.00.02 on GPU5 (0000:84:00.0)" in vbios.observed
    assert vbios.fix is not None and vbios.fix.kind == "firmware"


def test_vbios_unknown_without_nvml_or_proc(seed: Path) -> None:
    set_nvml(seed, "nvmlInit", [], error="DRIVER_NOT_LOADED")
    assert audit(seed)["firmware.vbios_consistency"].status == "ok"  # /proc/driver/nvidia/gpus/*/information
    remove_tree(seed, "/proc/driver/nvidia/gpus")
    vbios = audit(seed)["firmware.vbios_consistency"]
    assert vbios.status == "unknown" and "DRIVER_NOT_LOADED" in vbios.observed


def test_cppc_missing_on_zen4(seed: Path) -> None:
    remove_tree(seed, "/sys/devices/system/cpu/cpu0/acpi_cppc")
    cppc = audit(seed)["firmware.cppc"]
    assert (cppc.status, cppc.severity) == ("problem", "medium")
    assert cppc.fix is not None and (cppc.fix.kind, cppc.fix.where) == ("firmware", "host")
    assert "acpi-cpufreq" in cppc.observed


def test_cppc_fix_goes_to_the_containers_host_from_a_container(seed: Path) -> None:
    remove_tree(seed, "/sys/devices/system/cpu/cpu0/acpi_cppc")
    set_command(seed, ["systemd-detect-virt", "--container"], "lxc\n")
    cppc = audit(seed)["firmware.cppc"]
    assert cppc.fix is not None and cppc.fix.where == "container_host"


def test_cppc_not_applicable_on_intel(seed: Path) -> None:
    cpuinfo = (seed / "files/proc/cpuinfo").read_text().replace("AuthenticAMD", "GenuineIntel")
    set_file(seed, "/proc/cpuinfo", cpuinfo)
    assert audit(seed)["firmware.cppc"].status == "not_applicable"


def test_parse_cpuinfo() -> None:
    cpu = parse_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\nflags\t\t: fpu\n\n")
    assert cpu is not None and cpu.family == 0x17 and not cpu.amd_pstate_capable and not cpu.cppc_flag
    assert parse_cpuinfo("") is None


def test_small_bar1_without_resizable_bar_capability(seed: Path) -> None:
    _small_bar1(seed, largest_mib=128 * 1024)
    host = SnapshotHost(seed)
    path = host.resolve(config_path("0000:03:00.0"))
    data = bytearray((seed / "files" / path.lstrip("/")).read_bytes())
    data[0x102:0x104] = (0x0002).to_bytes(2, "little")  # AER is now the last extended capability
    set_file(seed, path, bytes(data))
    for bdf in ("0000:04:00.0", "0000:43:00.0", "0000:44:00.0", "0000:83:00.0", "0000:84:00.0", "0000:c3:00.0", "0000:c4:00.0"):
        set_file(seed, host.resolve(config_path(bdf)), bytes(data))
    rebar = audit(seed)["firmware.rebar"]
    # A professional card maps all of its memory when the firmware allows: the small BAR1 is a setting (medium).
    assert (rebar.status, rebar.severity) == ("problem", "medium") and "Above 4G decoding" in rebar.explanation
    for i in range(8):
        set_nvml(seed, "nvmlDeviceGetName", [i], "NVIDIA GeForce RTX 4090")
    rebar = audit(seed)["firmware.rebar"]
    assert (rebar.status, rebar.severity) == ("problem", "low")  # a consumer card may have a fixed small BAR1
    assert "no Resizable BAR capability" in rebar.explanation
