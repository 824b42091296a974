"""numa.gpu_affinity judges each server's binding against its GPUs' nodes; numa.balancing reads the value's bits.

The seventh review's F4: servers bound wholly to the other socket's nodes were ``ok`` with "cannot be seen without
the server process" although their ``/proc/PID/status`` was read. F5: ``kernel.numa_balancing=2`` (memory tiering
only, Linux 5.18+) was judged as mode 1 on a host with no lower memory tier.
"""

from __future__ import annotations

from dataclasses import replace

from rigaudit.agents.investigators.numa import INVESTIGATOR
from rigaudit.tools.schema.finding import CommandAction, Finding
from tests.hostgen import ARCHETYPES
from tests.hostgen import placement as pl
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import Fault, HostSpec
from tests.support.investigators import audit_snapshot

NPS4 = ARCHETYPES["epyc-nps4-l40s"]
HGX = ARCHETYPES["hgx-h200-noble"]


def judged(spec: HostSpec, check: str) -> Finding:
    return audit_snapshot(INVESTIGATOR, snapshot(spec))[check]


def _descriptions(finding: Finding) -> str:
    assert finding.fix is not None
    return " ".join(a.description for a in finding.fix.actions if isinstance(a, CommandAction))


def test_servers_bound_to_the_other_sockets_nodes_are_medium() -> None:
    finding = judged(pl.bound_to(NPS4, {0: [4, 5, 6, 7], 1: [0, 1, 2, 3]}), "numa.gpu_affinity")
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert "drives GPU0-3 (nodes 0-3): CPUs of nodes 4-7 (48-95,144-191) and memory of nodes 4-7" in finding.observed
    assert "drives GPU4-7 (nodes 4-7): CPUs of nodes 0-3" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "host")
    # both servers run under one unit: a unit-wide CPUAffinity= cannot serve both, so each gets numactl
    argvs = [a.argv for a in finding.fix.actions if isinstance(a, CommandAction)]
    assert ("numactl", "--cpunodebind=0-3", "--membind=0-3", "<server command>") in argvs
    assert ("numactl", "--cpunodebind=4-7", "--membind=4-7", "<server command>") in argvs


def test_one_server_bound_far_under_its_own_unit_names_the_units_binding() -> None:
    one = replace(HGX, processes=(replace(HGX.processes[0], gpus=(0, 1, 2, 3)),))
    finding = judged(pl.bound_to(one, {0: [1]}), "numa.gpu_affinity")
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    said = _descriptions(finding)
    assert "CPUAffinity=0-31,64-95 NUMAPolicy=bind NUMAMask=0" in said and "systemctl restart" in said


def test_a_tensor_parallel_server_over_both_sockets_bound_to_one_of_them_is_near() -> None:
    finding = judged(pl.bound_to(HGX, {0: [1]}), "numa.gpu_affinity")
    assert finding.status == "ok", finding.observed
    assert "bound to CPUs of node 1, memory of node 1" in finding.explanation


def test_servers_each_bound_to_their_gpus_nodes_are_ok() -> None:
    finding = judged(pl.bound_to(NPS4, {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}), "numa.gpu_affinity")
    assert finding.status == "ok", finding.observed
    assert "drives GPU4-7 (nodes 4-7): bound to CPUs of nodes 4-7, memory of nodes 4-7" in finding.explanation


def test_an_unbound_server_stays_ok() -> None:
    finding = judged(NPS4, "numa.gpu_affinity")
    assert finding.status == "ok", finding.observed
    assert "may run on every CPU" in finding.explanation and "cannot be seen" not in finding.explanation


def test_a_container_bound_far_is_fixed_in_its_cpuset() -> None:
    host = ARCHETYPES["docker-host-h100"]
    one = replace(host, processes=(replace(host.processes[0], gpus=(4, 5, 6, 7)),))
    finding = judged(pl.bound_to(one, {0: [0]}), "numa.gpu_affinity")
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert finding.fix is not None and finding.fix.where == "container_config"
    assert "--cpuset-cpus=32-63,96-127 --cpuset-mems=1" in _descriptions(finding)


def _status_gone(built) -> None:  # type: ignore[no-untyped-def]
    for pid in [pid for rows in built.gpu_process_map.values() for pid, *_ in rows]:
        built.tree.remove(f"/proc/{pid}/status")


def test_an_unread_binding_is_unknown() -> None:
    bound = pl.bound_to(NPS4, {0: [4, 5, 6, 7], 1: [0, 1, 2, 3]})
    spec = replace(bound, name=bound.name + "+no-status", faults=(*bound.faults, Fault("no-status", "", _status_gone)))
    finding = judged(spec, "numa.gpu_affinity")
    assert finding.status == "unknown", finding.observed
    assert "Cpus_allowed_list" in finding.observed


def test_tiering_only_balancing_without_a_lower_tier_is_ok() -> None:
    finding = judged(pl.memory_tiers(HGX), "numa.balancing")
    assert finding.status == "ok", finding.observed
    assert "memory_tier4: nodes 0-1" in finding.explanation


def test_tiering_only_balancing_with_a_cxl_tier_is_medium() -> None:
    finding = judged(pl.memory_tiers(HGX, cxl_kib=512 * 2**20), "numa.balancing")
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert "lower memory tier on node 2" in finding.observed


def test_normal_bit_with_tiering_is_medium() -> None:
    finding = judged(pl.memory_tiers(HGX, balancing=3), "numa.balancing")
    assert (finding.status, finding.severity) == ("problem", "medium"), finding.observed
    assert "NUMA_BALANCING_NORMAL" in finding.explanation
