"""p2p.status for pairs refused across an Intel CPU interconnect: a fact to place tensor-parallel groups by, which
costs only where a server's GPUs span it. Ok when every server keeps its GPUs on one side (named), low when one spans
the sockets, low (judged by capability) when no server can be traced."""

from __future__ import annotations

import pytest

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.spec import HostSpec
from tests.support.audits import audited

NVL = ARCHETYPES["h100nvl-bridged-pairs"]
L40S = ARCHETYPES["l40s-pex-iommu"]
SNC = ARCHETYPES["intel-snc-h100pcie"]


def p2p(spec: HostSpec) -> Finding:
    result = audited(spec)
    return next(f for f in result.findings if f.check == "p2p.status")


@pytest.mark.parametrize("spec", [NVL, L40S], ids=["nvl-tp2-per-pair", "l40s-tp4-per-switch"])
def test_refused_pairs_no_server_spans_are_ok_and_named(spec: HostSpec) -> None:
    """Before: low ('keep each TP group within one socket') on hosts whose groups already are."""
    found = p2p(spec)
    assert found.status == "ok", found.observed
    assert "No server's GPUs span a refused pair" in found.observed and "GPU0+GPU1" in found.observed


@pytest.mark.parametrize(
    "spec",
    [SNC, faults.tp_across_pairs(NVL), faults.no_server(NVL), faults.no_server(L40S)],
    ids=["snc-tp4-across-sockets", "nvl-tp4-across-pairs", "nvl-no-server", "l40s-no-server"],
)
def test_a_group_across_the_sockets_or_untraced_servers_keep_the_low_note(spec: HostSpec) -> None:
    found = p2p(spec)
    assert found.status == "problem" and found.severity == "low", found.observed
    assert found.fix is not None and "within one CPU socket" in " ".join(a.description for a in found.fix.actions)  # type: ignore[union-attr]
