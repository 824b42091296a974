"""A crafted DKMS tree of many NVIDIA versions is named in a few words (the terminal wraps a finding's words)."""

from __future__ import annotations

import json
from pathlib import Path

from rigaudit.orchestrator.cli import main
from tests.hostgen import ARCHETYPES
from tests.hostgen import driver_origin as origin
from tests.hostgen.cache import snapshot
from tests.support.mutate import _edit_json, light_copy


def test_twenty_thousand_dkms_versions_are_named_by_the_newest_four(tmp_path: Path) -> None:
    root = light_copy(snapshot(origin.dkms_build_failed(ARCHETYPES["hgx-h100-jammy"])), tmp_path / "snap")
    versions = [f"/var/lib/dkms/nvidia/{n}.0" for n in range(20_000)]
    _edit_json(root, "dirs.json", [], lambda dirs: [*dirs, *versions])
    out = tmp_path / "audit.json"
    main(["audit", "--snapshot", str(root), "--json", str(out), "--no-transcript"])  # every version listed: 4.8 s
    dkms = next(f for f in json.loads(out.read_text())["findings"] if f["check"] == "driver.dkms")
    assert "19999.0 and 19997 older" in dkms["observed"] and len(dkms["observed"]) < 600
