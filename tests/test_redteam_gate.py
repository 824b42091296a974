"""Attacks on ``rigaudit check`` (the scheduler's gate): host text that drives a terminal, outputs pointed at
FIFOs, devices and links planted where the gate writes. The standard: one clear line, no hang, no write outside
what was named, never a drain (exit 1) on "could not check"."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from tests.support.fleet import set_hostname
from tests.support.mutate import light_copy

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"
HOSTILE = "gpu\x1b]0;owned\x07\x1b[2J\u202e\u200bx"
"""A host name that sets the terminal's title, clears the screen and flips the text after it."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = light_copy(H200, tmp_path_factory.mktemp("hostile") / "snap")
    set_hostname(root, HOSTILE)
    return root


def _unsafe(text: str) -> list[str]:
    return [c for c in text if c in "\x1b\x07\u202e\u200b"]


@pytest.mark.parametrize("flags", [(), ("-v",), ("-q",)], ids=["default", "verbose", "quiet"])
def test_host_text_never_reaches_the_terminal_raw(
    hostile: Path, flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--snapshot", str(hostile), *flags]) == 0
    out = capsys.readouterr()
    assert _unsafe(out.out + out.err) == []
    if flags != ("-q",):
        assert "gpu\\x1b]0;owned\\x07" in out.out.splitlines()[-1]  # shown, as its escapes


def test_a_link_planted_as_the_textfile_is_replaced_never_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """node_exporter's textfile folder may be writable by others: a link there must not steer root's write."""
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (textfiles / "rigaudit.prom").symlink_to(fifo)  # would block the gate until its watchdog
    (textfiles / "other.prom").symlink_to(victim)
    for name in ("rigaudit.prom", "other.prom"):
        assert main(["check", "--snapshot", str(H200), "-q", "--prometheus", str(textfiles / name)]) == 0
        assert stat.S_ISREG((textfiles / name).lstat().st_mode)
        assert "rigaudit_check_verdict" in (textfiles / name).read_text()
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and victim.read_text() == "keep\n"
    capsys.readouterr()


def test_an_output_fifo_no_one_reads_is_one_line_not_a_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "result.json"
    os.mkfifo(fifo)
    assert main(["check", "--snapshot", str(H200), "-q", "--json", str(fifo)]) == 3  # healthy, output lost: not a drain
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no one reads" in err[0], err


def test_a_link_to_a_device_as_an_output_is_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A results folder shared with the nodes' users: ``gpu-07.json -> /dev/kmsg`` (or a disk) is not followed."""
    planted = tmp_path / "gpu-07.json"
    planted.symlink_to("/dev/full")  # a character device every writer fails on: followed, the write would fail
    assert main(["check", "--snapshot", str(H200), "-q", "--json", str(planted)]) == 0
    assert stat.S_ISREG(planted.lstat().st_mode) and '"rigaudit.check/1"' in planted.read_text()
    capsys.readouterr()
