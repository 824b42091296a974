"""SnapshotHost replays the snapshot format exactly."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost


def _run(coro_fn, *args):  # type: ignore[no-untyped-def]
    return anyio.run(coro_fn, *args)


def test_links_resolve_component_by_component(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    result = _run(host.read, "/sys/bus/pci/devices/0000:03:00.0/vendor")
    assert result.data == b"0x10de\n"
    assert _run(host.readlink, "/sys/bus/pci/devices/0000:03:00.0").startswith("../../../devices/pci0000:00/")


def test_listing_includes_links_and_dirs_json(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    listing = _run(host.list_dir, "/sys/bus/pci/devices")
    assert listing.entries is not None and "0000:03:00.0" in listing.entries
    efi = _run(host.list_dir, "/sys/firmware/efi")
    assert efi.entries is not None and "efivars" in efi.entries


def test_unreadable_and_missing(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    secure = _run(host.read, "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c")
    assert secure.error == "EACCES"
    assert _run(host.read, "/no/such/file").error == "ENOENT"
    assert not _run(host.exists, "/no/such/file")


def test_commands_exact_then_any_args_then_not_recorded(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    assert _run(host.run, ["uname", "-r"]).stdout.strip() == "6.8.12-11-pve"
    assert "Linux version" in _run(host.run, ["dmesg", "--ctime"]).stdout
    assert _run(host.run, ["tuned-adm", "active"]).error == "not_found"
    assert _run(host.run, ["lsblk"]).error == "not_recorded"


def test_nvml_results_and_errors(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    assert _run(host.nvml, "nvmlDeviceGetCount").value == 8
    assert _run(host.nvml, "nvmlDeviceGetNvLinkState", 0, 0).error == "NOT_SUPPORTED"
    assert _run(host.nvml, "nvmlDeviceGetBoardId", 0).error == "NOT_RECORDED"


@pytest.mark.parametrize("manifest", [None, "{not json", json.dumps({"format": "other/9"})])
def test_bad_manifest_is_one_clear_error(tmp_path: Path, manifest: str | None) -> None:
    (tmp_path / "files").mkdir()
    if manifest is not None:
        (tmp_path / "snapshot.json").write_text(manifest)
    with pytest.raises(SnapshotError) as info:
        SnapshotHost(tmp_path)
    assert "\n" not in str(info.value)


def test_damaged_jsonl_line_is_a_warning(seed_copy: Path) -> None:
    with (seed_copy / "nvml.jsonl").open("a") as handle:
        handle.write("{broken\n")
    host = SnapshotHost(seed_copy)
    assert any("damaged" in w for w in host.warnings)
    assert _run(host.nvml, "nvmlDeviceGetCount").value == 8


def test_writes_only_into_writable_copies(seed_dir: Path, seed_copy: Path) -> None:
    from rigaudit.tools.hosts.base import HostWriteError

    with pytest.raises(HostWriteError):
        _run(SnapshotHost(seed_dir).write, "/proc/sys/kernel/numa_balancing", b"0\n")
    writable = SnapshotHost(seed_copy, writable=True)
    _run(writable.write, "/proc/sys/kernel/numa_balancing", b"0\n")
    assert (seed_copy / "files/proc/sys/kernel/numa_balancing").read_bytes() == b"0\n"


def test_dotdot_after_a_link_climbs_from_the_link_target(seed_dir: Path) -> None:
    host = SnapshotHost(seed_dir)
    # 0000:03:00.0 lives below the switch port 0000:02:00.0: ".." from the GPU is that bridge.
    via_link = _run(host.read, "/sys/bus/pci/devices/0000:03:00.0/../vendor")
    bridge = _run(host.read, "/sys/bus/pci/devices/0000:02:00.0/vendor")
    assert via_link.data == bridge.data and via_link.data is not None


def test_ancestors_of_recorded_dirs_are_listed(seed_copy: Path) -> None:
    (seed_copy / "dirs.json").write_text(json.dumps(["/opt/gcc/lib"]))
    host = SnapshotHost(seed_copy)
    assert _run(host.list_dir, "/opt").entries == ("gcc",)
    assert _run(host.list_dir, "/opt/gcc").entries == ("lib",)
    assert _run(host.exists, "/opt/gcc")
