"""The DaemonSets' privileges against docs/fleet.md's table of what each buys and what a stricter variant loses.

Issue 35, item 5: each privilege of deploy/kubernetes's DaemonSets has a row; the runtime's seccomp filter applies;
and the checks a row says turn `unknown` without it are those that do, on a generated host read as a pod without
that capability would read it (tests/hostgen/faults.py: ``without_capability``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.hostgen import ARCHETYPES, faults
from tests.support.audits import audited
from tests.test_k8s_manifests import documents

FLEET_MD = Path(__file__).resolve().parent.parent / "docs" / "fleet.md"
_ROW = re.compile(r"^  \| `([A-Za-z_]+)` \| (.*) \|$", re.M)
_UNKNOWN = re.compile(r"^(.*?)\bsays? `unknown`")
_CHECK = re.compile(r"`([a-z0-9_]+\.[a-z0-9_]+)`")
HOSTS = {"SYS_PTRACE": "docker-host-h100", "SYS_ADMIN": "l40s-pex-iommu", "SYSLOG": "hgx-h100-jammy"}
"""The generated host each capability is tried on: servers in containers, GPUs sharing PCIe switches, any."""


def privilege_rows() -> dict[str, list[str]]:
    """docs/fleet.md's table: privilege -> its cells (reads, allows, the stricter variant loses)."""
    return {name: [c.strip() for c in cells.split(" | ")] for name, cells in _ROW.findall(FLEET_MD.read_text())}


def _daemonset_pods() -> list[dict[str, Any]]:
    pods = [d["spec"]["template"]["spec"] for n, d in documents() if d["kind"] == "DaemonSet" and "draino" not in n]
    assert len(pods) == 2
    return pods


def test_every_privilege_the_daemonsets_hold_has_its_row_and_no_other() -> None:
    rows = privilege_rows()
    for pod in _daemonset_pods():
        [container] = pod["containers"]
        granted = {*(["hostPID"] if pod.get("hostPID") else []), *container["securityContext"]["capabilities"]["add"]}
        assert set(rows) == granted == {"hostPID", "SYS_PTRACE", "DAC_READ_SEARCH", "SYS_ADMIN", "SYSLOG"}
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert all(len(cells) == 3 and all(cells) for cells in rows.values())


def _unknown(spec: Any) -> set[str]:
    return {f.check for f in audited(spec).findings if f.status == "unknown"}


@pytest.mark.parametrize("capability", sorted(faults.WITHOUT))
def test_without_a_capability_exactly_the_checks_its_row_names_say_unknown(capability: str) -> None:
    loses = privilege_rows()[capability][2]
    named = _UNKNOWN.match(loses)
    assert named is not None, loses
    spec = ARCHETYPES[HOSTS[capability]]
    before = _unknown(spec)
    assert _unknown(faults.without_capability(spec, capability)) - before == set(_CHECK.findall(named.group(1)))
