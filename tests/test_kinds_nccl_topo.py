"""nccl.topo_file on the Azure ND H100 v5 guest: NCCL pointed at Azure's ndv5 topology file (healthy as generated,
through /etc/nccl.conf as Azure's HPC image sets it), and what is said where it is not, or cannot be told."""

from __future__ import annotations

from dataclasses import replace

from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.azure import topo_xml
from tests.hostgen.build import build
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious

AZURE = KINDS["azure-nd-h100-v5"]
CHECK = "nccl.topo_file"


def test_the_hpc_images_nccl_conf_and_topology_file_are_ok() -> None:
    found = by_check(AZURE)[CHECK]
    assert found.status == "ok", found.observed
    assert "/etc/nccl.conf names /opt/microsoft/ndv5/topo.xml (present)" in found.observed, found.observed
    xml = topo_xml(build(AZURE))
    assert '<pci busid="0001:00:00.0" class="0x030200"' in xml and '<pci busid="0101:00:00.0" class="0x020700"' in xml
    assert xml.count('<cpu numaid="') == 2 and xml.index("0008:00:00.0") < xml.index('<cpu numaid="1"') < xml.index("0009")


def test_a_marketplace_image_without_the_file_is_a_medium_restart_fix() -> None:
    spec = faults.nccl_topo_unset(AZURE)
    assert serious(spec) == {CHECK: "medium@host"}
    found = by_check(spec)[CHECK]
    assert found.fix is not None and found.fix.kind == "restart", found.fix
    words = " ".join([found.fix.summary, *(a.description for a in found.fix.actions)])
    assert "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml" in words and "/etc/nccl.conf" in words, words
    assert "azhpc-images" in words and "restart the inference server" in words, words
    assert "talks to other nodes (pid 3120: NCCL_IB_HCA" in found.observed and "own PCI domain" in found.explanation


def test_a_server_that_talks_to_no_other_node_needs_the_file_little() -> None:
    """TP 8 inside the VM stays on NVLink, which NCCL finds without the file: low, medium once a server crosses nodes."""
    local = tuple(
        replace(p, env=tuple((k, v) for k, v in p.env if not k.startswith(("NCCL_IB", "UCX_")))) for p in AZURE.processes
    )
    spec = faults.nccl_topo_unset(replace(AZURE, processes=local))
    found = by_check(spec)[CHECK]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert "no server here talks to other nodes" in found.observed


def test_the_servers_environment_naming_the_file_is_ok_without_nccl_conf() -> None:
    spec = faults.server_env(replace(AZURE, nccl_conf=None), NCCL_TOPO_FILE="/opt/microsoft/ndv5-topo.xml")
    found = by_check(spec)[CHECK]
    assert found.status == "ok" and "environment of pid" in found.observed, found.observed


def test_an_environment_naming_a_missing_file_outranks_nccl_conf() -> None:
    found = by_check(faults.server_env(AZURE, NCCL_TOPO_FILE="/opt/topo.xml"))[CHECK]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert "names /opt/topo.xml (absent)" in found.observed


def test_an_environment_naming_a_missing_file_is_corrected_in_the_environment() -> None:
    """Second review X5. Before: 'add the line NCCL_TOPO_FILE=... to /etc/nccl.conf', which the host already has and
    which the server's environment outranks: the fix changed nothing."""
    found = by_check(faults.server_env(AZURE, NCCL_TOPO_FILE="/opt/topo.xml"))[CHECK]
    assert found.fix is not None, found.observed
    described = [getattr(a, "description", "") for a in found.fix.actions]
    assert not any(d.startswith("add the line") for d in described), described
    assert any("in the server's environment" in d and "outranks" in d for d in described), described


def test_unreadable_server_environments_leave_it_unknown() -> None:
    found = by_check(faults.server_environ_unreadable(AZURE))[CHECK]
    assert found.status == "unknown", found.observed
    assert "/proc/PID/environ" in found.observed and "unreadable" in found.observed


def test_with_no_server_visible_the_missing_file_stays_low() -> None:
    found = by_check(faults.no_server(faults.nccl_topo_unset(AZURE)))[CHECK]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert "no server visible" in found.observed


def test_off_azure_it_does_not_apply() -> None:
    for spec in (ARCHETYPES["hgx-h100-jammy"], KINDS["gcp-a3-highgpu-8g"]):
        assert by_check(spec)[CHECK].status == "not_applicable"
