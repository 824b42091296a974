"""LocalHost: this machine's files, commands and writes, through the Host protocol."""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.tools.hosts.base import Host, HostWriteError
from rigaudit.tools.hosts.local import CappedOutput, LocalHost, command_environment, read_file

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


def test_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    monkeypatch.setenv("HF_TOKEN", "hf_abc")
    monkeypatch.setenv("RIGAUDIT_HARMLESS", "visible")
    monkeypatch.setenv("PATH", "/nonexistent")
    result = _run(LocalHost().run, ["env"])
    assert result.ok
    assert "sk-test-123" not in result.stdout and "hf_abc" not in result.stdout
    assert "RIGAUDIT_HARMLESS=visible" in result.stdout and "LC_ALL=C" in result.stdout
    assert "/usr/sbin" in command_environment({"PATH": "/bin"})["PATH"].split(":")


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
