"""LocalHost: this machine's files, commands and writes, through the Host protocol."""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.tools.hosts import launch
from rigaudit.tools.hosts.base import Host, HostWriteError
from rigaudit.tools.hosts.launch import (
    FIXED_ENVIRONMENT,
    SYSTEM_PATH,
    ProgramError,
    command_environment,
    resolve_program,
    trusted_id,
    untrusted_writer,
)
from rigaudit.tools.hosts.local import CappedOutput, LocalHost, read_file

PY = sys.executable


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(lambda: fn(*args, **kwargs))


def test_is_a_host() -> None:
    host = LocalHost()
    assert isinstance(host, Host)
    assert host.source == "local" and host.name


def test_reads_pseudo_files_reported_as_size_zero() -> None:
    host = LocalHost()
    assert os.stat("/proc/self/status").st_size == 0
    status = _run(host.read, "/proc/self/status")
    assert status.ok and b"Pid:" in (status.data or b"")
    assert _run(host.read, "/proc/cmdline").data == Path("/proc/cmdline").read_bytes()


def test_read_errors_are_errno_names(tmp_path: Path) -> None:
    host = LocalHost()
    assert _run(host.read, str(tmp_path / "missing")).error == "ENOENT"
    assert _run(host.read, str(tmp_path)).error == "EISDIR"
    (tmp_path / "file").write_text("x")
    assert _run(host.read, str(tmp_path / "file" / "below")).error == "ENOTDIR"
    assert _run(host.read, "relative/path").error == "EINVAL"


def test_large_files_are_refused_not_cut(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    assert _run(LocalHost(max_read_bytes=10).read, str(big)).error == "EFBIG"
    assert read_file(str(big), 100).data == b"x" * 100


def test_a_fifo_does_not_hang_a_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = _run(LocalHost().read, str(fifo))
    assert result.data == b"" or result.error == "EAGAIN"


def test_list_dir_readlink_exists(tmp_path: Path) -> None:
    host = LocalHost()
    for name in ("b", "a", "c"):
        (tmp_path / name).write_text(name)
    (tmp_path / "link").symlink_to("a")
    (tmp_path / "dangling").symlink_to("nowhere")
    assert _run(host.list_dir, str(tmp_path)).entries == ("a", "b", "c", "dangling", "link")
    assert _run(host.list_dir, str(tmp_path / "nope")).error == "ENOENT"
    assert _run(host.list_dir, str(tmp_path / "a")).error == "ENOTDIR"
    assert _run(host.readlink, str(tmp_path / "link")) == "a"
    assert _run(host.readlink, str(tmp_path / "a")) is None
    assert _run(host.exists, str(tmp_path / "link"))
    assert not _run(host.exists, str(tmp_path / "dangling"))  # exists follows links, as SnapshotHost does
    assert _run(host.readlink, str(tmp_path / "dangling")) == "nowhere"
    devices = _run(host.list_dir, "/sys/bus/pci/devices")
    assert devices.entries == tuple(sorted(os.listdir("/sys/bus/pci/devices")))


def test_run_a_command() -> None:
    result = _run(LocalHost().run, ["uname", "-r"])
    assert result.ok and result.stdout.strip() == os.uname().release
    assert result.duration_s >= 0 and result.truncated == 0
    failing = _run(LocalHost().run, [PY, "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"])
    assert failing.exit_code == 3 and failing.error is None and failing.stderr == "bad"


def test_missing_program_and_permission_are_results_not_exceptions(tmp_path: Path) -> None:
    host = LocalHost()
    missing = _run(host.run, ["rigaudit-no-such-program-xyz", "--help"])
    assert missing.error == "not_found" and missing.exit_code is None
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)  # not executable, even for root
    assert _run(host.run, [str(script)]).error == "failed_to_start"
    assert _run(host.run, []).error == "failed_to_start"


def test_timeout_kills_the_whole_process_group() -> None:
    code = "import subprocess, sys, time; p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); time.sleep(60)"
    result = _run(LocalHost().run, [PY, "-c", code], timeout_s=0.5)
    assert result.error == "timeout" and result.exit_code is None
    grandchild = int(result.stdout.split()[0])
    try:
        fd = os.pidfd_open(grandchild)
    except ProcessLookupError:
        return  # already gone
    try:
        readable, _, _ = select.select([fd], [], [], 5)  # a pidfd turns readable when the process exits
        assert readable, "the grandchild survived the timeout"
    finally:
        os.close(fd)


def test_output_is_capped_head_and_tail_kept() -> None:
    code = "import sys; sys.stdout.write('H' * 100 + 'x' * 100000 + 'T' * 100)"
    result = _run(LocalHost(max_output_bytes=1000).run, [PY, "-c", code])
    assert result.ok
    assert result.stdout.startswith("H" * 100) and result.stdout.endswith("T" * 100)
    assert result.truncated == 100200 - 1000
    assert f"{result.truncated} bytes cut" in result.stdout


def test_capped_output_counts_what_it_cut() -> None:
    capped = CappedOutput(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qr"):
        capped.add(chunk)
    assert bytes(capped.head) == b"abcde" and bytes(capped.tail) == b"nopqr" and capped.cut == 8


def test_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "OPENAI_API_KEY": "sk-test-123",
        "HF_TOKEN": "hf_abc",
        "LD_PRELOAD": "/tmp/evil.so",
        "LD_LIBRARY_PATH": "/tmp/evil",
        "PYTHONPATH": "/tmp/evil",
        "RIGAUDIT_HARMLESS": "visible",
        "HOME": "/tmp/not-home",
        "TZ": "Europe/Paris",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/nonexistent")
    result = _run(LocalHost().run, ["env"])
    assert result.ok
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert set(seen) == {"PATH", "HOME", "TZ", *FIXED_ENVIRONMENT}
    assert seen["PATH"].split(":") == list(SYSTEM_PATH) and seen["LC_ALL"] == "C" and seen["TZ"] == "Europe/Paris"
    assert seen["HOME"] != "/tmp/not-home"


@pytest.mark.parametrize("zone", ["../../etc/shadow", ":/tmp/zone", "/etc/shadow", "a b"])
def test_a_time_zone_that_names_a_file_is_dropped(zone: str) -> None:
    assert "TZ" not in command_environment({"TZ": zone})


def _planted(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\necho planted\n")
    script.chmod(0o755)
    return folder


def test_a_planted_program_first_on_path_is_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _planted(tmp_path, "uname")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ.get('PATH', '')}")
    result = _run(LocalHost().run, ["uname", "-r"])
    assert result.ok and result.stdout.strip() == os.uname().release


def test_a_program_found_only_outside_the_system_directories_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _planted(tmp_path, "rigaudit-planted-tool")
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin")
    result = _run(LocalHost().run, ["rigaudit-planted-tool"])
    assert result.error == "not_found" and "planted" not in result.stdout
    assert str(folder / "rigaudit-planted-tool") in result.stderr and "system directories" in result.stderr
    assert "\n" not in result.stderr


def test_a_relative_program_path_is_refused() -> None:
    result = _run(LocalHost().run, ["./uname"])
    assert result.error == "failed_to_start" and "relative" in result.stderr


def test_a_program_in_a_directory_anyone_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _planted(tmp_path, "rigaudit-shared-tool")
    folder.chmod(0o777)
    monkeypatch.setattr(launch, "SYSTEM_PATH", (str(folder),))
    with pytest.raises(ProgramError, match="writable by everyone"):
        resolve_program("rigaudit-shared-tool")
    folder.chmod(0o755)
    (folder / "rigaudit-shared-tool").chmod(0o777)
    with pytest.raises(ProgramError, match="writable by everyone"):
        resolve_program("rigaudit-shared-tool")
    (folder / "rigaudit-shared-tool").chmod(0o755)
    assert resolve_program("rigaudit-shared-tool") == str(folder / "rigaudit-shared-tool")


def test_untrusted_writers(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = shared / "mine"
    mine.write_text("x")
    assert untrusted_writer(os.stat(shared), entry=os.stat(mine)) is None  # sticky: only its owner (us) may swap it
    shared.chmod(0o777)
    assert untrusted_writer(os.stat(shared), entry=os.stat(mine)) == "writable by everyone"
    assert trusted_id(0, 1000) and trusted_id(1000, 1000) and trusted_id(104, 1000)
    assert not trusted_id(1001, 1000) and not trusted_id(65534, 1000)


def test_commands_run_in_the_root_directory() -> None:
    assert _run(LocalHost().run, ["pwd"]).stdout.strip() == "/"


def test_write_whole_and_at_offset(tmp_path: Path) -> None:
    host = LocalHost()
    target = tmp_path / "config"
    target.write_bytes(bytes(16))
    _run(host.write, str(target), b"\x50\x29", offset=8)
    assert target.read_bytes() == bytes(8) + b"\x50\x29" + bytes(6)
    _run(host.write, str(target), b"1\n")
    assert target.read_bytes() == b"1\n"


def test_write_errors_are_one_line(tmp_path: Path) -> None:
    host = LocalHost()
    with pytest.raises(HostWriteError, match="ENOENT") as missing:
        _run(host.write, str(tmp_path / "absent"), b"1")
    assert "\n" not in str(missing.value) and not (tmp_path / "absent").exists()  # never creates files
    with pytest.raises(HostWriteError, match="EISDIR"):
        _run(host.write, str(tmp_path), b"1")
    with pytest.raises(HostWriteError, match="absolute"):
        _run(host.write, "relative", b"1")
