"""One reading of "is this a container": the audit's platform layers and the benchmarks' container token agree.

Both read :mod:`rigaudit.tools.hosts.container_signs`. Before, the token had signs of its own: it took an empty
``/.dockerenv`` in a disk image for a container (the audit set it aside) and missed an LXC container known by its
cgroup alone (the audit saw it), so a calibration was keyed by a container the audit said was not there, or not.
"""

from __future__ import annotations

import functools
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.facts.platform_signals import environ_vars
from rigaudit.tools.bench.machine import CONTAINER_NONE, container_token
from rigaudit.tools.hosts.container_signs import cgroup_container, cgroup_engine_id, cgroup_runtime
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec

_TOKEN_READS = (
    "/proc/self/mountinfo",
    "/proc/self/cgroup",
    "/proc/1/cgroup",
    "/proc/mounts",
    "/run/.containerenv",
    "/dev/.lxc-boot-id",
    "/.dockerenv",
    "/proc/sys/kernel/random/boot_id",
    "/proc/1/environ",
)
CASES = [
    *(ARCHETYPES[n] for n in sorted(ARCHETYPES)),
    faults.dockerenv_in_image(ARCHETYPES["hgx-h100-jammy"]),
    faults.dockerenv_in_image(ARCHETYPES["proxmox-q35-h100pcie-vm"]),
    faults.lxc_cgroup_only(ARCHETYPES["hgx-h100-jammy"]),
]


@functools.cache
def _both(root: Path) -> tuple[bool, str]:
    """Whether the audit's platform detection sees a container, and the token benchmark results record (a session
    snapshot is read only: one reading each)."""

    async def read() -> tuple[bool, dict[str, bytes | None]]:
        probe = Probe(SnapshotHost(root))
        platform = await detect_platform(probe)
        files = {p: (await probe.read(p)).data for p in _TOKEN_READS}
        return platform.in_container, files

    in_container, files = anyio.run(read)
    return in_container, container_token(files.get, environ_vars(files["/proc/1/environ"]))


@pytest.mark.parametrize("spec", CASES, ids=[s.name for s in CASES])
def test_the_audit_and_the_container_token_agree(spec: HostSpec) -> None:
    in_container, token = _both(snapshot(spec))
    assert in_container == (token != CONTAINER_NONE), token


def test_the_cases_cover_both_answers() -> None:
    answers = {_both(snapshot(s))[0] for s in CASES}
    assert answers == {True, False}


@pytest.mark.parametrize(
    ("cgroup", "runtime", "named"),
    [
        ("0::/system.slice/docker-" + "ab" * 32 + ".scope", "docker", None),
        ("0::/kubepods.slice/kubepods-burstable-pod1a2b3c4d_5e6f.slice", "kubernetes", "k8s pod 1a2b3c4d"),
        ("0::/lxc.payload.101/init.scope", "lxc", "lxc 101"),
        ("0::/machine.slice/libpod-" + "cd" * 32 + ".scope", "podman", "podman " + "cd" * 6),
        ("0::/nerdctl.slice/nerdctl-" + "ef" * 32 + ".scope", "containerd", None),
        ("0::/system.slice/docker.service", None, None),
        ("0::/init.scope", None, None),
    ],
)
def test_one_table_of_cgroup_runtimes(cgroup: str, runtime: str | None, named: str | None) -> None:
    assert cgroup_runtime(cgroup) == runtime
    assert (cgroup_engine_id(cgroup) is not None) == (runtime in ("docker", "podman", "containerd"))
    if named:
        assert cgroup_container(cgroup) == named
