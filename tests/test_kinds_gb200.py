"""The GB200 NVL72 compute tray: two Grace CPUs and four Blackwell GPUs whose NVLink goes to the rack's switch trays
(their NVOS runs the fabric manager and NVLSM), with IMEX for multi-node NVLink memory. Healthy as generated; the
driver rules judge the tray as a tray, not as an NVSwitch host missing its fabric manager."""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.tools.schema.finding import Finding, ServiceStartAction
from tests.hostgen import faults
from tests.hostgen.build import build
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious
from tests.support.mutate import light_copy, set_command

TRAY = KINDS["gb200-nvl72-tray"]


def test_the_tray_is_generated_as_nvidia_smi_shows_one() -> None:
    tree = build(TRAY).tree
    smi = tree.commands[("nvidia-smi",)]["stdout"]
    assert smi.count("NVIDIA GB200") == 4 and "00000008:01:00.0" in smi and "00000019:01:00.0" in smi
    assert "189471MiB" in smi
    assert "NV18" in tree.commands[("nvidia-smi", "topo", "-m")]["stdout"]
    fabric = tree.nvml_result("nvmlDeviceGetGpuFabricInfo", 0)
    assert fabric["state"] == 3 and fabric["clusterUuid"] != "00000000-0000-0000-0000-000000000000"
    assert tree.text("/etc/nvidia-imex/nodes_config.cfg") is not None
    assert "nvidia-caps-imex-channels" in (tree.text("/proc/devices") or "")
    assert not any(p.startswith("/dev/nvidia-nvswitch") for p in tree.unreadable)


def test_the_healthy_tray_has_no_serious_problem() -> None:
    assert serious(TRAY) == {}


def test_the_tray_runs_no_fabric_manager_by_design() -> None:
    """Before: ok for the wrong reason ('an NVSwitch fabric; nvidia-fabricmanager inactive on this host'), and
    driver.fabricmanager_version unknown for want of a fabric manager package the tray never has."""
    found = by_check(TRAY)
    fm = found["driver.fabricmanager"]
    assert fm.status == "ok" and "compute tray" in fm.observed and "switch trays" in (fm.explanation or ""), fm.observed
    version = found["driver.fabricmanager_version"]
    assert version.status == "not_applicable" and "switch trays" in version.observed, version.observed


def _imex(spec: HostSpec) -> Finding:
    return audit_snapshot(DRIVER, snapshot(spec), evidence_read=True, problem_has_fix=True)["driver.imex"]


def test_imex_on_the_healthy_tray_is_ok() -> None:
    found = _imex(TRAY)
    assert found.status == "ok", found.observed
    assert "18 nodes" in found.observed and "channel0" in found.observed


def test_imex_stopped_for_a_reason_its_log_gives_is_fixed_by_that_reason() -> None:
    """The daemon's own words (no interface of this tray among the nodes config's addresses) choose the fix: the
    nodes config, not a bare start that fails the same way."""
    found = _imex(faults.imex_wrong_nodes(TRAY))
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "No matching network interface found" in found.observed
    assert found.fix is not None and "nodes config" in found.fix.summary
    assert not any(isinstance(a, ServiceStartAction) for a in found.fix.actions)
    assert "multi-node NVLink" in (found.explanation or "")


def test_imex_without_its_nodes_config_is_told_to_write_it() -> None:
    found = _imex(faults.imex_nodes_config_missing(TRAY))
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "/etc/nvidia-imex/nodes_config.cfg" in found.observed and "missing" in found.observed
    assert found.fix is not None and "/etc/nvidia-imex/nodes_config.cfg" in found.fix.summary


def test_imex_whose_unit_state_is_unreadable_is_unknown(tmp_path: Path) -> None:
    root = light_copy(snapshot(TRAY), tmp_path / "tray")
    set_command(root, ("systemctl", "is-active", "nvidia-imex"), error="denied")
    found = audit_snapshot(DRIVER, root)["driver.imex"]
    assert found.status == "unknown" and "nvidia-imex" in found.observed, found.observed


def test_imex_is_not_applicable_off_a_multi_node_nvlink_rack() -> None:
    """HGX B200's fabric is the baseboard's (NVML: cluster UUID all zeros): no IMEX domain."""
    assert _imex(KINDS["hgx-b200-noble"]).status == "not_applicable"


def test_a_tray_whose_rack_fabric_is_not_up_is_sent_to_the_switch_trays() -> None:
    """Generated (the earlier test mutated a B200 copy): the switch trays have not completed the fabric, so NVML says
    not started, the NVLinks are down, CUDA refuses work. The fabric manager is the switch trays', not this tray's."""
    found = by_check(faults.rack_fabric_not_up(TRAY))
    fm = found["driver.fabricmanager"]
    assert (fm.status, fm.severity) == ("problem", "critical"), fm.observed
    assert fm.fix is not None and "switch trays" in fm.fix.summary
    assert not any(isinstance(a, ServiceStartAction) for a in fm.fix.actions)
    p2p = found["p2p.status"]
    assert p2p.status == "problem" and p2p.fix is not None and "driver.fabricmanager" in p2p.fix.summary, p2p.observed
    assert found["driver.imex"].status == "ok"


def test_imex_without_a_channel_is_told_to_create_one() -> None:
    """IMEX channels are not created by default and do not survive a reboot (IMEX guide): CUDA's IMEX calls then
    fail with an insufficient permission error."""
    found = _imex(faults.imex_no_channel(TRAY))
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert found.fix is not None and "channel0" in found.fix.summary and "reboot" in (found.fix.persist or "")


def test_an_xid_on_the_tray_says_nvidias_follow_up_once() -> None:
    """Second review X4. Before: 'if it repeats, report to NVIDIA support if it repeats': the catalog's follow-up
    already carries its condition, which the explanation added again (the actions did not)."""
    finding = by_check(faults.xid(TRAY))["gpu.xid"]
    assert (finding.status, finding.severity) == ("problem", "critical"), finding.observed
    assert finding.explanation.count("if it repeats") == 1, finding.explanation


def test_a_tray_whose_rack_fabric_is_not_up_words_its_links_for_the_tray() -> None:
    """A compute tray has no fabric manager: its links wait on the rack's NVLink switch trays."""
    links = by_check(faults.rack_fabric_not_up(TRAY))["nvlink.links"]
    assert links.status == "unknown" and "switch trays" in links.observed, links.observed
    assert "NVSwitch fabric" not in links.observed and "the fabric manager trains" not in links.observed


def test_a_tray_whose_rack_fabric_is_not_up_words_p2p_for_any_fabric() -> None:
    """p2p.status names the NVLink fabric and sends to driver.fabricmanager, which says where it runs (the rack's
    switch trays here): never an NVSwitch fabric of the tray's own."""
    p2p = by_check(faults.rack_fabric_not_up(TRAY))["p2p.status"]
    assert p2p.status == "problem" and p2p.fix is not None, p2p.observed
    words = " ".join([p2p.explanation, p2p.fix.summary, *(a.description for a in p2p.fix.actions)])
    assert "NVSwitch fabric" not in words and "driver.fabricmanager" in words, words


def test_a_link_down_on_the_tray_is_checked_at_its_switch_tray_end() -> None:
    """Second review X7: a tray has no NVSwitch baseboard to reseat; its links run to the rack's switch trays."""
    links = by_check(faults.nvlink_down(TRAY, links=((1, 3),)))["nvlink.links"]
    assert (links.status, links.severity) == ("problem", "high"), links.observed
    assert links.fix is not None
    words = " ".join([links.fix.summary, *(a.description for a in links.fix.actions)])
    assert "switch tray" in words and "baseboard" not in words, words
