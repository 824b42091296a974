"""The persist advice of several fixes, followed in any order (and again), keeps every setting.

Each sysctl fix says how to keep its setting across reboots. They used to share one file, written whole by
numa.balancing and numa.hugepages (``>``) and appended to by numa.zone_reclaim (``>>``): following the plan in
order lost the earlier lines. The advice is followed here on paper: each ``echo '...' > FILE`` / ``>> FILE`` of
every problem's persist line, in plan order and reversed, on an in-memory /etc.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from rigaudit.agents.persist import sysctl_file, sysctl_persist
from rigaudit.orchestrator.cli import main
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot

_WRITE = re.compile(r"echo '([^']*)' (>>?) (/etc/\S+)")


def _follow(persists: list[str], files: dict[str, list[str]]) -> None:
    for persist in persists:
        for line, how, path in _WRITE.findall(persist):
            files[path] = [*files.get(path, []), line] if how == ">>" else [line]


def test_each_sysctl_has_its_own_file() -> None:
    keys = ["kernel.numa_balancing", "vm.nr_hugepages", "vm.zone_reclaim_mode", "vm.swappiness"]
    assert len({sysctl_file(k) for k in keys}) == len(keys)
    assert sysctl_persist("vm.swappiness", "10") == (
        "echo 'vm.swappiness = 10' > /etc/sysctl.d/90-rigaudit-swappiness.conf && "
        "sysctl -p /etc/sysctl.d/90-rigaudit-swappiness.conf"
    )


def test_following_every_persist_line_in_either_order_keeps_every_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ARCHETYPES["hgx-h100-jammy"]  # two NUMA nodes: balancing and zone reclaim both apply
    spec = replace(base, os=replace(base.os, numa_balancing=1, zone_reclaim=1))
    root = snapshot(spec)  # the session's (its files linked to the archetype's): read only
    out = tmp_path / "audit.json"
    assert main(["audit", "--snapshot", str(root), "--json", str(out), "--no-transcript", "--no-live"]) in (0, 1)
    capsys.readouterr()
    data = json.loads(out.read_text())
    by_check = {f["check"]: f for f in data["findings"]}
    wanted = {"numa.balancing": "kernel.numa_balancing = 0", "numa.zone_reclaim": "vm.zone_reclaim_mode = 0"}
    assert all(by_check[c]["status"] == "problem" for c in wanted), {c: by_check[c]["status"] for c in wanted}
    order = [c for step in data["plan"]["steps"] for c in step.get("checks", [step.get("check")]) if c]
    persists = [by_check[c]["fix"]["persist"] for c in order if (by_check.get(c) or {}).get("fix")]
    assert len(persists) >= len(wanted)
    for order in (persists, persists[::-1]):  # in the plan's order, or steps taken the other way round
        files: dict[str, list[str]] = {}
        _follow(order, files)
        _follow(order, files)  # followed twice: nothing is duplicated or lost
        kept = [line for lines in files.values() for line in lines]
        assert all(kept.count(line) == 1 for line in wanted.values()), files
