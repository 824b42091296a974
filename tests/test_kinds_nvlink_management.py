"""HGX B200's NVLink management ports: the ConnectX bridge of the GPU baseboard shows the host four more mlx5 RDMA
devices, which NVLSM and the fabric manager drive the NVSwitches through (their VPD says SMDL=SW_MNG). They carry no
network traffic, so the rules that count, place or judge RDMA NICs leave them out."""

from __future__ import annotations

from dataclasses import replace

from tests.hostgen.archetypes import ALL8, sglang
from tests.hostgen.cache import built as build_once
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check, serious

B200 = KINDS["hgx-b200-noble"]
B200_NO_NICS = replace(
    B200,
    name="hgx-b200-noble+no-data-nics",
    summary=f"{B200.summary}; no data NICs (a single-node inference server): only the NVLink management ports",
    nics=None,
    processes=(
        replace(
            sglang("/models/DeepSeek-V3", ALL8, mib=165000, env=(("NCCL_IB_DISABLE", "1"),)),
            torch="2.7.0+cu128",
            torch_cuda="12.8",
            nccl="2.26.2",
        ),
    ),
)
MANAGEMENT = ("mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11")
DATA_PORTS = "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"


def _with_hca(hca: str) -> HostSpec:
    """The B200 host whose server selects its RDMA devices with ``NCCL_IB_HCA=hca``."""
    server = B200.processes[0]
    env = tuple((k, hca if k == "NCCL_IB_HCA" else v) for k, v in server.env)
    return replace(
        B200,
        name=f"hgx-b200-noble+hca-{hca}",
        summary=f"{B200.summary}; the server's NCCL_IB_HCA={hca}",
        processes=(replace(server, env=env),),
    )


def test_the_management_ports_are_there_as_the_fabric_managers_start_script_finds_them() -> None:
    built = build_once(B200)
    tree = built.tree
    assert built.rdma_names == [f"mlx5_{k}" for k in range(12)]
    vpd = {name: tree.files.get(f"{f.path}/vpd") for name, f in zip(built.rdma_names, built.placed.nics, strict=True)}
    assert all(vpd.values()), [name for name, data in vpd.items() if not data]
    assert [name for name, data in vpd.items() if data and b"SMDL=SW_MNG" in data] == list(MANAGEMENT)
    assert any(line.startswith("ib_umad ") for line in (tree.text("/proc/modules") or "").splitlines())
    journal = tree.commands[("journalctl", "-u", "nvidia-fabricmanager", "-n", "50", "--no-pager")]["stdout"]
    assert "Checking mlx5_10..." in journal and "Using device mlx5_10, port 0x" in journal, journal
    assert "Detected NVL5+ system" in journal


def test_the_rdma_rules_count_the_data_nics_only() -> None:
    """Before: driver.peermem '12 InfiniBand NICs (mlx5_0-mlx5_11)'; numa.nic_affinity placed mlx5_8-11 as NICs."""
    found = by_check(B200)
    peermem = found["driver.peermem"]
    assert peermem.status == "ok" and "8 InfiniBand NICs (mlx5_0–mlx5_7)" in peermem.observed, peermem.observed
    affinity = found["numa.nic_affinity"]
    assert not any(name in affinity.observed for name in MANAGEMENT), affinity.observed


def test_a_b200_without_data_nics_has_no_rdma_nic() -> None:
    """Before: driver.peermem judged 4 'InfiniBand NICs', numa.nic_affinity a low problem (the GPUs of socket 1 'have
    no local RDMA NIC') and nccl.env medium 'InfiniBand present but disabled' for NCCL_IB_DISABLE=1, all on the
    NVSwitch management ports alone."""
    found = by_check(B200_NO_NICS)
    assert "nccl.env" not in serious(B200_NO_NICS), found["nccl.env"].observed
    for check in ("driver.peermem", "numa.nic_affinity"):
        assert found[check].status == "not_applicable", (check, found[check].observed)
    assert "NVLink management ports mlx5_0–mlx5_3" in found["driver.peermem"].observed  # named as left out


def test_the_healthy_b200_names_its_data_ports_exactly() -> None:
    assert dict(B200.processes[0].env)["NCCL_IB_HCA"] == DATA_PORTS
    assert by_check(B200)["nccl.env"].status == "ok"


def test_an_hca_prefix_that_takes_in_the_management_ports_is_named() -> None:
    """Before: nccl.env ok. NCCL reads a bare name as a prefix, so mlx5 also selects mlx5_8-mlx5_11."""
    found = by_check(_with_hca("mlx5"))["nccl.env"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert "NCCL_IB_HCA=mlx5" in found.observed, found.observed
    assert all(name in found.explanation for name in MANAGEMENT), found.explanation
    assert found.fix is not None and found.fix.where == "host"
    assert any(f"NCCL_IB_HCA={DATA_PORTS}" in a.description for a in found.fix.actions), found.fix.actions


def test_a_prefix_of_one_data_port_takes_in_two_management_ports() -> None:
    """mlx5_1 selects mlx5_10 and mlx5_11 as well (NCCL's own example); the fix keeps to the data port meant."""
    found = by_check(_with_hca("mlx5_1"))["nccl.env"]
    assert found.status == "problem" and "mlx5_10, mlx5_11" in found.explanation, found.explanation
    assert found.fix is not None and any("NCCL_IB_HCA==mlx5_1 " in a.description for a in found.fix.actions)


def test_exact_names_and_exclusions_of_the_management_ports_are_fine() -> None:
    for hca in ("=mlx5_0:1,mlx5_1:1", "^=mlx5_8,mlx5_9,mlx5_10,mlx5_11", "^mlx5_8,mlx5_9,mlx5_1"):
        found = by_check(_with_hca(hca))["nccl.env"]
        assert found.status == "ok", (hca, found.observed)
