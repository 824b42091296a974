"""A snapshot is untrusted input: no read leaves it, only regular files are read, sizes and counts are bounded."""

from __future__ import annotations

import json
import os
import shutil
import stat
import uuid
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.files.bounded import MAX_FILE_BYTES
from rigaudit.tools.hosts.base import HostWriteError
from rigaudit.tools.hosts.snapshot import SnapshotError, SnapshotHost
from rigaudit.tools.share import share_bundle
from tests.conftest import FIXTURES

SMALL = FIXTURES / "h200x1-vm"


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    root = tmp_path / "snap"
    shutil.copytree(SMALL, root)
    return root


@pytest.fixture
def canary(tmp_path: Path) -> tuple[Path, str]:
    """A file outside the snapshot whose content must never appear in anything rigaudit prints or writes."""
    marker = f"CANARY-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(marker + "\n")
    (outside / "cmdline").write_text(marker + "\n")
    return outside, marker


def _read(host: SnapshotHost, path: str) -> tuple[bytes | None, str | None]:
    async def go() -> tuple[bytes | None, str | None]:
        result = await host.read(path)
        return result.data, result.error

    return anyio.run(go)


def _replace_with_link(root: Path, path: str, target: Path) -> None:
    mirror = root / "files" / path.lstrip("/")
    if mirror.is_dir() and not mirror.is_symlink():
        shutil.rmtree(mirror)
    else:
        mirror.unlink(missing_ok=True)
    mirror.parent.mkdir(parents=True, exist_ok=True)
    mirror.symlink_to(target)


def test_a_real_link_inside_files_is_never_followed(snap: Path, canary: tuple[Path, str]) -> None:
    outside, _ = canary
    _replace_with_link(snap, "/proc/cmdline", outside / "secret")
    _replace_with_link(snap, "/etc", outside)  # a folder link: nothing under it is reachable
    host = SnapshotHost(snap)
    assert _read(host, "/proc/cmdline") == (None, "ENOTREG")
    assert _read(host, "/etc/secret")[0] is None


def test_audit_share_and_diff_never_carry_an_outside_file(
    snap: Path, canary: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside, marker = canary
    _replace_with_link(snap, "/proc/cmdline", outside / "cmdline")
    _replace_with_link(snap, "/etc/os-release", outside / "secret")
    out = tmp_path / "audit.json"
    assert main(["audit", "--snapshot", str(snap), "--no-live", "--no-transcript", "--json", str(out)]) in (0, 4)
    assert marker not in out.read_text()
    summary = share_bundle(snap, tmp_path / "bundle.tar.gz")
    assert any("left out" in w for w in summary.warnings)
    assert marker.encode() not in _unpacked(tmp_path / "bundle.tar.gz")
    assert main(["diff", str(snap), str(SMALL), "--json", str(tmp_path / "diff.json")]) in (0, 1)
    assert marker not in (tmp_path / "diff.json").read_text()
    assert marker not in "".join(capsys.readouterr())


def _unpacked(bundle: Path) -> bytes:
    import gzip

    return gzip.decompress(bundle.read_bytes())


def test_a_fifo_reads_as_not_a_regular_file_at_once(snap: Path) -> None:
    mirror = snap / "files" / "proc" / "cmdline"
    mirror.unlink()
    os.mkfifo(mirror)
    # opening a FIFO that no one writes blocks for ever: an answer at all (before the test's timeout) is the proof
    assert _read(SnapshotHost(snap), "/proc/cmdline") == (None, "ENOTREG")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a character device needs root (CI runs as root)")
def test_a_character_device_is_never_opened(snap: Path) -> None:
    mirror = snap / "files" / "proc" / "cpuinfo"
    mirror.unlink(missing_ok=True)
    os.mknod(mirror, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero: reading it never ends
    assert _read(SnapshotHost(snap), "/proc/cpuinfo") == (None, "ENOTREG")


def test_a_file_larger_than_the_limit_reads_as_efbig(snap: Path) -> None:
    mirror = snap / "files" / "proc" / "cmdline"
    with mirror.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    assert _read(SnapshotHost(snap), "/proc/cmdline") == (None, "EFBIG")


def test_files_that_is_a_link_is_refused(snap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(snap / "files")
    (snap / "files").symlink_to("/")
    with pytest.raises(SnapshotError, match="files"):
        SnapshotHost(snap)
    assert main(["audit", "--snapshot", str(snap), "--no-live", "--no-transcript"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]


def test_recorded_links_resolve_inside_the_snapshot(snap: Path) -> None:
    links = json.loads((snap / "links.json").read_text())
    links["/proc/escape"] = "../../../../../../etc/hostname"
    (snap / "links.json").write_text(json.dumps(links))
    (snap / "files" / "etc").mkdir(exist_ok=True)
    (snap / "files" / "etc" / "hostname").write_text("inside\n")
    assert _read(SnapshotHost(snap), "/proc/escape") == (b"inside\n", None)


def test_a_nul_byte_in_a_path_is_an_error_result(snap: Path) -> None:
    assert _read(SnapshotHost(snap), "/proc/cmd\x00line") == (None, "EINVAL")


def test_deeply_nested_and_huge_indexes_are_warnings(snap: Path) -> None:
    (snap / "links.json").write_text("[" * 100_000 + "]" * 100_000)
    (snap / "dirs.json").write_text('["/a", ' + "{" * 5000 + "}" * 5000 + "]")
    deep = '{"fn": "nvmlDeviceGetName", "args": [0], "result": ' + "[" * 3000 + "]" * 3000 + "}\n"
    with (snap / "nvml.jsonl").open("a") as handle:
        handle.write(deep)
    host = SnapshotHost(snap)
    text = " ".join(host.warnings)
    assert "links.json" in text and "dirs.json" in text and "nvml.jsonl" in text


def test_command_output_is_capped_like_a_live_run(snap: Path) -> None:
    record = {"argv": ["dmesg"], "exit_code": 0, "stdout": "x" * (3 * 1024 * 1024), "stderr": ""}
    (snap / "commands.jsonl").write_text(json.dumps(record) + "\n")

    async def go() -> tuple[int, int]:
        result = await SnapshotHost(snap).run(["dmesg"])
        return len(result.stdout), result.truncated

    size, truncated = anyio.run(go)
    assert size < 1.1 * 1024 * 1024 and truncated > 0


def test_an_overlong_jsonl_line_is_skipped_not_held(snap: Path) -> None:
    with (snap / "commands.jsonl").open("w") as handle:
        handle.write('{"argv": ["a"], "stdout": "' + "y" * (17 * 1024 * 1024) + '"}\n')
        handle.write(json.dumps({"argv": ["uname", "-r"], "exit_code": 0, "stdout": "6.8\n", "stderr": ""}) + "\n")
    host = SnapshotHost(snap)
    assert any("longer than" in w for w in host.warnings)

    async def go() -> str:
        return (await host.run(["uname", "-r"])).stdout

    assert anyio.run(go) == "6.8\n"


def test_an_nvml_device_count_of_10000_does_not_hang(snap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [json.loads(line) for line in (snap / "nvml.jsonl").read_text().splitlines() if line.strip()]
    for record in lines:
        if record["fn"] == "nvmlDeviceGetCount":
            record["result"] = 10_000
    (snap / "nvml.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    recorded = sum(1 for r in lines if r["fn"].startswith("nvmlDeviceGet"))
    calls: list[tuple[str, tuple[int, ...]]] = []
    replay = SnapshotHost.nvml

    async def counted(self: SnapshotHost, fn: str, *args: int) -> object:
        calls.append((fn, args))
        return await replay(self, fn, *args)

    monkeypatch.setattr(SnapshotHost, "nvml", counted)
    out = tmp_path / "a.json"
    assert main(["audit", "--snapshot", str(snap), "--no-live", "--no-transcript", "--json", str(out)]) in (0, 4)
    assert "not a GPU count" in out.read_text()
    # the count is refused, not walked: no call names a device the snapshot lacks, and the calls stay few
    assert all(not args or args[0] < 8 for fn, args in calls if fn.startswith("nvmlDevice")), sorted(set(calls))[-5:]
    assert len(calls) < 10 * max(recorded, 100)


def test_a_write_never_goes_through_a_link(snap: Path, canary: tuple[Path, str]) -> None:
    outside, marker = canary
    target = "/proc/sys/kernel/numa_balancing"
    _replace_with_link(snap, target, outside / "secret")
    host = SnapshotHost(snap, writable=True)

    async def go() -> None:
        await host.write(target, b"0\n")

    with pytest.raises(HostWriteError, match="not a regular file"):
        anyio.run(go)
    assert (outside / "secret").read_text() == marker + "\n"


def test_a_folder_link_cannot_redirect_a_created_file(snap: Path, canary: tuple[Path, str]) -> None:
    outside, _ = canary
    _replace_with_link(snap, "/etc/sysctl.d", outside)
    host = SnapshotHost(snap, writable=True)

    async def go() -> None:
        await host.write("/etc/sysctl.d/90-rigaudit.conf", b"vm.swappiness = 10\n")

    with pytest.raises(HostWriteError):
        anyio.run(go)
    assert sorted(p.name for p in outside.iterdir()) == ["cmdline", "secret"]
