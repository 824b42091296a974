"""Digits str.isdigit takes and int() refuses (``²``) in a crafted snapshot: read as no number, never a failed area."""

from __future__ import annotations

import json
from pathlib import Path

from rigaudit.orchestrator.cli import main
from tests.support.mutate import light_copy, set_file

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


def test_a_process_folder_and_a_meminfo_count_in_superscript_digits_fail_no_area(tmp_path: Path) -> None:
    root = light_copy(H200, tmp_path / "snap")
    set_file(root, "/proc/\u00b2/comm", "python\n")
    meminfo = (root / "files/proc/meminfo").read_text()
    set_file(root, "/proc/meminfo", meminfo.replace("HugePages_Total:", "HugePages_Total:       \u00b2\nX:"))
    out = tmp_path / "audit.json"
    assert main(["audit", "--snapshot", str(root), "--json", str(out), "--no-transcript"]) in (0, 1)
    failed = [i for i in json.loads(out.read_text())["investigators"] if i["status"] != "done"]
    assert failed == []
