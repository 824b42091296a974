"""A two-socket EPYC with NPS4: a NUMA node is a quadrant of a socket, so a GPU far from a NIC is not always across
the socket interconnect, and "a NIC per socket" does not give every node one."""

from __future__ import annotations

from tests.hostgen import ARCHETYPES
from tests.support.audits import audited


def test_a_nic_per_socket_is_judged_per_numa_node() -> None:
    result = audited(ARCHETYPES["epyc-nps4-l40s"])
    finding = next(f for f in result.findings if f.check == "numa.nic_affinity")
    assert finding.status == "problem" and finding.severity == "low"  # no server talks to another node
    assert "NPS4" in finding.explanation and "quadrants of one socket" in finding.explanation
    assert finding.fix is not None and "every NUMA node" in finding.fix.summary
    assert "mlx5_1 node 4" in finding.observed  # one NIC per socket: nodes 1-3 and 5-7 have none
