"""The report's images folder follows the output rule (third attack pass: another user's ``r-images`` link in a
shared folder had the images written into the folder it led to)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rigaudit.orchestrator.report.plots import picture_markdown, pyplot


@pytest.mark.skipif(os.geteuid() != 0 or pyplot() is None, reason="needs root (a link of another user) and matplotlib")
def test_another_user_s_images_link_in_a_shared_folder_is_not_followed(tmp_path: Path) -> None:
    shared, target = tmp_path / "shared", tmp_path / "target"
    shared.mkdir()
    shared.chmod(0o1777)
    target.mkdir()
    (shared / "r-images").symlink_to(target)
    os.lchown(shared / "r-images", 12345, 12345)

    def draw(plt: object, path: Path) -> None:
        path.write_bytes(b"png")

    text = picture_markdown("p2p", "P2P", shared / "r.md", draw, None)
    assert list(target.iterdir()) == [] and "not drawn" in text
