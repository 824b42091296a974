"""Crafted ``--expect`` files (attack review, 2026-12-02): what no host prints is a usage error, not a drain."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rigaudit.orchestrator.gate.expect import load_expectations, parse_expectations
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.bounded import InputError


@pytest.mark.parametrize("value", ["58\x00*", "\x1b]0;title\x07*", "580.*\x7f", "H200\u202e"])
def test_a_control_character_in_a_value_is_a_usage_error(value: str) -> None:
    """A NUL or an escape in an expected value matches no host: every node would fail the check and be drained."""
    with pytest.raises(UsageError, match="control character"):
        parse_expectations(f"driver = {value}\n", "e.conf")


def test_a_byte_order_mark_is_not_part_of_the_first_key(tmp_path: Path) -> None:
    path = tmp_path / "expect.conf"
    path.write_bytes(b"\xef\xbb\xbfdriver = 580.*\ngpus = 8\n")
    assert load_expectations(path).values == {"driver": "580.*", "gpus": 8}


def test_a_huge_number_is_named_in_short() -> None:
    with pytest.raises(UsageError) as raised:
        parse_expectations("gpus = " + "9" * 5000 + "x\n", "e.conf")
    assert len(str(raised.value)) < 120


def test_a_device_or_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "zero.conf").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.conf")
    for name in ("zero.conf", "fifo.conf"):
        with pytest.raises((UsageError, InputError), match="not a regular file"):
            load_expectations(tmp_path / name)
