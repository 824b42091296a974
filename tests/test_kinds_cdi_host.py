"""The host of a rootless Podman container and its CDI spec (what the third and fourth reviews left unbuilt): the spec
the engines read is judged where it is, on the host (driver.cdi_spec), and the rootless container's server is judged
by what its container was given (its /dev, its user namespace), not by what the host has."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rigaudit.agents.investigators.container import INVESTIGATOR as CONTAINER
from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import PODMAN_HOST, PODMAN_ROOTLESS_CDI
from tests.hostgen.spec import CdiSpec, HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious
from tests.support.mutate import light_copy

REFRESHED = replace(PODMAN_HOST, cdi=CdiSpec(path="/var/run/cdi/nvidia.yaml", refresh=True, toolkit="1.18.0"))


def audit(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot((CONTAINER, DRIVER), snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_host_sees_a_rootless_podman_server_and_the_spec_nvidia_ctk_wrote() -> None:
    root = snapshot(PODMAN_HOST) / "files"
    spec = (root / "etc/cdi/nvidia.yaml").read_text()
    assert "kind: nvidia.com/gpu" in spec and "hostPath: /usr/lib64/libcuda.so.550.127.05" in spec
    assert "- path: /dev/nvidia-uvm\n" in spec and "update-ldcache" in spec
    assert (root / "proc/3120/uid_map").read_text().split()[:2] == ["0", "1001"]
    assert "user@1001.service" in (root / "proc/3120/cgroup").read_text()
    assert not (root / "proc/1902").exists()  # Podman runs no daemon: conmon, no dockerd
    assert (root / "proc/3100/cmdline").read_bytes().startswith(b"/usr/bin/conmon\x00")


def test_the_healthy_host_has_no_serious_problem_and_its_spec_is_whole() -> None:
    assert serious(PODMAN_HOST) == {}
    found = by_check(PODMAN_HOST)["driver.cdi_spec"]
    assert found.status == "ok" and "all present" in found.observed, found.observed


def test_a_spec_left_behind_a_driver_upgrade_is_generated_again_at_its_path() -> None:
    """Before: no check read the spec; the host showed a healthy driver and no server, and nothing said why."""
    found = audit(faults.cdi_spec_stale(PODMAN_HOST))["driver.cdi_spec"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "generated for driver 550.127.05; the loaded driver is 550.144.03" in found.observed
    assert "/usr/lib64/libcuda.so.550.127.05" in found.observed
    assert found.fix is not None and found.fix.where == "host"
    assert found.fix.actions[0].argv == ("nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml")
    assert "nvidia-cdi-refresh" in found.fix.persist


def test_a_refresh_unit_left_disabled_is_enabled_not_bypassed() -> None:
    """Toolkit 1.18's nvidia-cdi-refresh is installed but its path unit is disabled: the cause is the unit."""
    healthy = audit(REFRESHED)["driver.cdi_spec"]
    assert healthy.status == "ok" and "/var/run/cdi/nvidia.yaml" in healthy.observed, healthy.observed
    found = audit(faults.cdi_refresh_disabled(REFRESHED))["driver.cdi_spec"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert found.fix is not None and found.fix.summary.startswith("Enable nvidia-cdi-refresh.path")
    argvs = [a.argv for a in found.fix.actions]
    assert ("systemctl", "start", "nvidia-cdi-refresh.service") in argvs
    assert ("systemctl", "enable", "--now", "nvidia-cdi-refresh.path") in argvs


def test_a_spec_generated_before_uvm_loaded_is_named_by_the_nodes_it_lacks() -> None:
    found = audit(faults.cdi_spec_before_uvm(PODMAN_HOST))["driver.cdi_spec"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "lists no /dev/nvidia-uvm" in found.observed and found.fix is not None and found.fix.where == "host"


def test_inside_a_cdi_container_the_spec_is_the_hosts_to_read() -> None:
    found = by_check(PODMAN_ROOTLESS_CDI)["driver.cdi_spec"]
    assert found.status == "unknown" and "on the host" in found.observed, found.observed


def test_a_rootless_server_seen_from_the_host_is_judged_by_its_containers_dev() -> None:
    """Before: medium @container_config, '--ulimit memlock=-1:-1', from the host's NICs (a host 'always reaches' its
    RDMA devices), for a container given none and a flag a rootless container cannot take."""
    found = by_check(PODMAN_HOST)["container.memlock"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert "not passed into the server's container" in found.observed
    assert found.fix is not None and found.fix.where == "host" and "user@1001.service" in found.fix.actions[0].description
    given = audit(faults.rdma_passed_in(PODMAN_HOST))["container.memlock"]
    assert (given.status, given.severity) == ("problem", "medium"), given.observed
    assert given.fix is not None and given.fix.where == "host" and "uid 1001" in given.fix.summary


def test_a_folder_of_thousands_of_specs_is_read_for_its_first_sixteen(tmp_path: Path) -> None:
    """A crafted /etc/cdi of 3,000 NVIDIA specs took the audit 26 s (each spec's paths asked, then all listed)."""
    root = light_copy(snapshot(PODMAN_HOST), tmp_path / "snap")
    spec = (root / "files/etc/cdi/nvidia.yaml").read_text()
    for n in range(3000):
        (root / f"files/etc/cdi/n{n:04d}.yaml").write_text(spec)
    found = audit_snapshot(DRIVER, root)["driver.cdi_spec"]
    assert found.status == "ok" and found.observed.endswith("; /etc/cdi: 2985 more spec files, not read")
    assert found.observed.count(".yaml:") == 16
