"""Writes into a snapshot mirror whatever the names a crafted input carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.tools.hosts.mirror import Mirror, MirrorError


def test_a_name_at_the_file_systems_limit_is_written(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    mirror = Mirror(tmp_path)
    name = "c" * 250  # a temporary name of the form .NAME.suffix would pass 255 bytes
    mirror.write(f"/proc/1/{name}", b"x\n", create=True)
    assert mirror.read(f"/proc/1/{name}") == b"x\n"
    assert sorted(p.name for p in (tmp_path / "files" / "proc" / "1").iterdir()) == [name]


def test_a_name_past_the_limit_is_one_mirror_error(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    mirror = Mirror(tmp_path)
    with pytest.raises(MirrorError) as caught:
        mirror.write("/proc/1/" + "[" * 100_000, b"x", create=True)
    assert "ENAMETOOLONG" in str(caught.value) or caught.value.code == "ENAMETOOLONG"
    assert [p.name for p in (tmp_path / "files" / "proc" / "1").iterdir()] == []  # no temporary file left
