"""A rootless Podman container given its GPUs through CDI (the third review, P1-P4): the user's limits cap what the
container can be given, only memory and pids are delegated to its cgroup, and its device nodes are the host's CDI
spec's. Before these fixes the audit asked for `--ulimit memlock=-1:-1` (which a rootless container cannot take),
reported a medium for RDMA the container cannot reach, could not tell the CPU quota, and sent a stale CDI spec to
`nvidia-modprobe` and `docker run --gpus all`."""

from __future__ import annotations

from dataclasses import replace

from rigaudit.agents.investigators.container import INVESTIGATOR as CONTAINER
from rigaudit.agents.investigators.driver import INVESTIGATOR as DRIVER
from rigaudit.agents.investigators.runtime import INVESTIGATOR as RUNTIME
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.kinds import PODMAN_ROOTLESS_CDI
from tests.hostgen.spec import HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious


def audit(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot((CONTAINER, DRIVER), snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_container_is_rootless_podman_with_cdi_libraries_at_host_paths() -> None:
    root = snapshot(PODMAN_ROOTLESS_CDI) / "files"
    assert "rootless=1" in (root / "run/.containerenv").read_text()
    assert (root / "proc/412/uid_map").read_text().split()[:2] == ["0", "1001"]
    assert "/usr/lib64/libnvidia-ml.so.550.127.05" in (root / "proc/412/mounts").read_text()


def test_the_healthy_rootless_container_has_no_serious_problem() -> None:
    assert serious(PODMAN_ROOTLESS_CDI) == {}
    assert by_check(PODMAN_ROOTLESS_CDI)["container.platform"].observed.startswith("podman container")


def test_a_limit_the_server_cannot_meet_rdma_with_is_low_and_raised_for_the_user() -> None:
    """P1. No /dev/infiniband in the container: the host's NICs are not the server's. Before: medium
    @container_config, 'recreate the container with --ulimit memlock=-1:-1'."""
    found = by_check(PODMAN_ROOTLESS_CDI)["container.memlock"]
    assert (found.status, found.severity) == ("problem", "low"), found.observed
    assert "no /dev/infiniband" in found.observed
    assert found.fix is not None and found.fix.where == "container_host"


def test_a_rootless_container_given_rdma_raises_the_users_hard_limit_on_the_host() -> None:
    """P2. With the RDMA devices passed in the medium stands; the fix is the user's hard limit first."""
    found = audit(faults.rdma_passed_in(PODMAN_ROOTLESS_CDI))["container.memlock"]
    assert (found.status, found.severity) == ("problem", "medium"), found.observed
    assert found.fix is not None and found.fix.where == "container_host"
    text = " ".join(a.description for a in found.fix.actions)
    assert "uid 1001" in text and "limits.d" in text and "user@1001.service" in text


def test_a_cgroup_without_the_cpu_controller_has_no_quota_to_judge() -> None:
    """P3. cgroup.controllers 'memory pids' tells: no CFS quota can apply. Before: unknown (cpu.max: ENOENT)."""
    found = by_check(PODMAN_ROOTLESS_CDI)["container.cgroup_cpu"]
    assert found.status == "ok" and "no cpu controller" in found.observed, found.observed


def test_a_cdi_spec_without_uvm_is_generated_again_on_the_host_by_both_checks() -> None:
    """P4. The module is loaded on the host; the spec predates it. Before: driver.uvm 'nvidia-modprobe -c0 -u' and
    container.gpu_devices 'docker run --gpus all' at the container's config."""
    found = audit(faults.cdi_spec_without_uvm(PODMAN_ROOTLESS_CDI))
    for check in ("driver.uvm", "container.gpu_devices"):
        finding = found[check]
        assert (finding.status, finding.severity) == ("problem", "high"), (check, finding.observed)
        assert finding.fix is not None and finding.fix.where == "container_host", check
        assert finding.fix.actions[0].argv == ("nvidia-ctk", "cdi", "generate", "--output=/etc/cdi/nvidia.yaml"), check


def test_a_host_driver_upgraded_without_reboot_is_rebooted_on_the_container_host() -> None:
    """P5. The CDI-mounted libraries are the host's: the reboot is the machine's that runs the container. Before:
    high @host, a layer that names the container's own machine."""
    found = audit(faults.driver_upgraded_without_reboot(PODMAN_ROOTLESS_CDI))["driver.library_mismatch"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "/usr/lib64/libnvidia-ml.so.1" in found.observed and "the host's" in found.observed
    assert found.fix is not None and found.fix.where == "container_host" and "reboot" in found.fix.summary


def test_a_kernel_log_the_container_may_not_read_is_not_sent_to_root() -> None:
    """Fourth review, P6. A rootless container's root is uid 1001 on the host: 'run as root' cannot read dmesg there.
    Before: 'kernel.dmesg_restrict=1: run as root'."""
    found = by_check(PODMAN_ROOTLESS_CDI)["gpu.xid"]
    assert found.status == "unknown" and "run as root" not in found.observed, found.observed
    assert "CAP_SYSLOG" in found.observed and "dmesg on the node" in found.observed


def test_a_rootless_containers_root_is_held_to_its_users_process_limit() -> None:
    """Fourth review, P7. The kernel exempts only the host's root from RLIMIT_NPROC; a rootless container's root is
    uid 1001 there. Before: ok at 1024, '(root: RLIMIT_NPROC is not enforced for it)'."""
    healthy = by_check(PODMAN_ROOTLESS_CDI)["runtime.nproc"]
    assert healthy.status == "ok" and "host uid 1001" in healthy.observed, healthy.observed
    spec = replace(PODMAN_ROOTLESS_CDI, processes=tuple(replace(p, nproc=1024) for p in PODMAN_ROOTLESS_CDI.processes))
    found = audit_snapshot(RUNTIME, snapshot(spec), evidence_read=True, problem_has_fix=True)["runtime.nproc"]
    assert found.status == "problem", found.observed
    assert (
        found.fix is not None and found.fix.where == "container_host" and "user@1001.service" in found.fix.actions[0].description
    )
