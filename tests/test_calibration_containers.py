"""Containers built from one image share its /etc/machine-id: their calibrations keep apart by the container.

The fixtures are two containers of one image (the same machine-id, the same image layers in their root
mount) on one host and on another, as Docker, Podman, containerd under Kubernetes and LXC show them from
inside, and the host that runs them. A calibration is used for a result only when both are known to be the
same machine and container; where that cannot be told it is not used (and ``bench calibrate`` says so).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench import loadgen
from rigaudit.tools.bench.calibration import calibrate, container_warning, find, mismatch, save
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.like import differences
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.machine import (
    CONTAINER_NONE,
    CONTAINER_UNKNOWN,
    container_token,
    same_container,
    token,
)
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.testing.bench_pairs import Session, session_result
from tests.support.bench_files import write_results

BAKED = token(b"5f0c3a9e8d7b6a5f4e3d2c1b0a998877")
"""The machine-id baked into the image: every container of it has this one."""
LAYER = "3c5d" * 16
"""An image layer: in the root mount of every container of the image."""
ID_A, ID_B, ID_C = "a1" * 32, "b2" * 32, "c3" * 32


def _docker_mountinfo(container: str) -> str:
    root = (
        f"1203 1150 0:118 / / rw,relatime master:312 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X:"
        f"/var/lib/docker/overlay2/{LAYER}/diff,upperdir=/var/lib/docker/overlay2/{container[::-1]}/diff"
    )
    binds = [
        f"{1212 + i} 1203 259:2 /var/lib/docker/containers/{container}/{name} /etc/{name} rw,relatime - ext4 /dev/nvme0n1p2 rw"
        for i, name in enumerate(("resolv.conf", "hostname", "hosts"))
    ]
    return "\n".join([root, "1204 1203 0:121 / /proc rw,nosuid - proc proc rw", *binds]) + "\n"


DOCKER_A = {"/proc/self/mountinfo": _docker_mountinfo(ID_A), "/proc/self/cgroup": "0::/\n", "/.dockerenv": ""}
DOCKER_B = {"/proc/self/mountinfo": _docker_mountinfo(ID_B), "/proc/self/cgroup": "0::/\n", "/.dockerenv": ""}
DOCKER_C = {**DOCKER_B, "/proc/self/mountinfo": _docker_mountinfo(ID_C)}
"""Container C: the same image on another host."""
DOCKER_V1 = {"/proc/self/mountinfo": "1 0 0:1 / / rw - overlay overlay rw\n", "/proc/self/cgroup": f"12:memory:/docker/{ID_A}\n"}
"""Container A seen through cgroup v1 (the host's cgroup namespace), its binds elsewhere."""
PODMAN = {
    "/proc/self/mountinfo": (
        f"40 30 0:40 /home/u/.local/share/containers/storage/overlay-containers/{ID_B}/userdata/hostname "
        "/etc/hostname rw - xfs /dev/sda1 rw\n"
    ),
    "/run/.containerenv": "",
}
PODMAN_ENV_ONLY = {"/run/.containerenv": f'engine="podman-4.9.3"\nname="web"\nid="{ID_C}"\nrootless=1\n'}
KUBERNETES = {
    "/proc/self/mountinfo": (
        "90 80 259:1 /var/lib/kubelet/pods/0f2a6c1e-8f1b-4a50-9d3e-2b7c9e4f1a00/etc-hosts /etc/hosts rw - ext4 /dev/root rw\n"
        f"91 80 259:1 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/{ID_A}/hostname /etc/hostname rw - ext4 "
        "/dev/root rw\n"
    ),
}
HOST_RUNNING_DOCKER = {
    "/proc/self/mountinfo": (
        "25 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
        f"610 25 0:60 / /var/lib/docker/containers/{ID_A}/mounts/shm rw - tmpfs shm rw,size=65536k\n"
        f"611 25 0:61 / /var/lib/docker/overlay2/{LAYER}/merged rw - overlay overlay rw\n"
    ),
    "/proc/self/cgroup": "0::/system.slice/docker.service\n",
}
LXC_START_1 = {"/dev/.lxc-boot-id": "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9\n", "/proc/self/cgroup": "0::/\n"}
LXC_START_2 = {"/dev/.lxc-boot-id": "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9\n", "/proc/self/cgroup": "0::/\n"}
HIDDEN = {"/proc/self/mountinfo": "1 0 0:1 / / rw - overlay overlay rw\n", "/proc/self/cgroup": "0::/\n", "/.dockerenv": ""}
"""A container that shows no id: its engine marker only (and no boot id)."""
BOOT_1 = {**HIDDEN, "/proc/sys/kernel/random/boot_id": "188408f7-a0b2-4112-ae18-f8ceaefe3a1f\n"}
BOOT_2 = {**HIDDEN, "/proc/sys/kernel/random/boot_id": "2a6c0e1f-3b4d-4e5f-8a9b-0c1d2e3f4a5b\n"}
"""Containers that show no id, on one host (or sandbox) in one boot, and on another or after a reboot."""


def _token(files: dict[str, str], environ: dict[str, str] | None = None) -> str:
    return container_token(lambda path: files[path].encode() if path in files else None, environ or {})


def test_each_engine_names_its_container_by_a_digest_of_its_id() -> None:
    a, b, c = _token(DOCKER_A), _token(DOCKER_B), _token(DOCKER_C)
    assert len({a, b, c}) == 3 and all(t.startswith("container:") and len(t) == len("container:") + 16 for t in (a, b, c))
    assert ID_A not in a and LAYER not in a  # a digest of the id; the layers two containers share are never it
    assert _token(DOCKER_V1) == a == _token(KUBERNETES)  # the same id through the cgroup, and a pod's sandbox
    assert _token(PODMAN) == b and _token(PODMAN_ENV_ONLY) == c


def test_outside_a_container_and_inside_one_that_hides_its_id() -> None:
    assert _token(HOST_RUNNING_DOCKER) == CONTAINER_NONE  # its containers' mounts are not its own binds
    assert _token({}) == CONTAINER_NONE
    assert _token(HIDDEN) == CONTAINER_UNKNOWN
    assert _token(BOOT_1).startswith("kernel-boot:") and _token(BOOT_1) != _token(BOOT_2)
    assert _token({"/proc/sys/kernel/random/boot_id": BOOT_1["/proc/sys/kernel/random/boot_id"]}) == CONTAINER_NONE
    assert _token({}, {"container": "podman"}) == _token({}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == CONTAINER_UNKNOWN
    assert _token({"/run/.containerenv": ""}) == CONTAINER_UNKNOWN
    one, two = _token(LXC_START_1), _token(LXC_START_2)
    assert one.startswith("container-boot:") and one != two


def test_same_container_says_when_it_cannot_tell() -> None:
    a, b, lxc1, lxc2 = _token(DOCKER_A), _token(DOCKER_B), _token(LXC_START_1), _token(LXC_START_2)
    assert same_container(a, a) is True and same_container(a, b) is False
    assert same_container(CONTAINER_NONE, CONTAINER_NONE) is True and same_container(CONTAINER_NONE, a) is False
    assert same_container(None, CONTAINER_NONE) is True and same_container(None, None) is True  # as before
    assert same_container(None, a) is None  # recorded before containers were: it may have been any
    assert same_container(CONTAINER_UNKNOWN, CONTAINER_UNKNOWN) is None and same_container(CONTAINER_UNKNOWN, a) is None
    assert same_container(lxc1, lxc1) is True and same_container(lxc1, lxc2) is None  # a restart, or a clone
    boot1, boot2 = _token(BOOT_1), _token(BOOT_2)
    assert same_container(boot1, boot1) is True and same_container(boot1, boot2) is None  # a reboot, or another host
    assert same_container(boot1, a) is False and same_container(boot1, lxc1) is False


def _sessions(container: str | None, count: int = 4, seed: int = 3, host: str = "web") -> list[BenchResult]:
    import random

    rng = random.Random(seed)
    made = [session_result(rng, Session(session_cv=0.05), 5, 1.0) for _ in range(count)]
    return [r.model_copy(update={"host": host, "host_id": BAKED, "container": container}) for r in made]


def test_a_calibration_from_container_a_is_not_container_bs() -> None:
    a, b, c = _token(DOCKER_A), _token(DOCKER_B), _token(DOCKER_C)
    calibration = calibrate(_sessions(a), sources=["s"] * 4)
    assert calibration.host_id == BAKED and calibration.container == a
    save(calibration)
    found = find(_sessions(a, seed=9)[0])  # container A again (restarted: the same id)
    assert found is not None and found.calibration == calibration and found.warning is None
    assert find(_sessions(b)[0]) is None  # container B, same image, same host: not its calibration
    assert find(_sessions(c)[0]) is None  # container C, same image, another host
    assert find(_sessions(CONTAINER_NONE)[0]) is None  # the host itself
    named = mismatch(calibration, _sessions(b)[0])  # named with --calibration: refused, saying why
    assert named == [f"container {a[10:18]} vs container {b[10:18]} on machine-id {BAKED[11:19]}"]
    assert differences(_sessions(a)[0], _sessions(b)[0]) == []  # a compare of the two is of one machine


def test_each_container_keeps_its_own_calibration() -> None:
    a, b = _token(DOCKER_A), _token(DOCKER_B)
    cal_a, cal_b = calibrate(_sessions(a), sources=["s"] * 4), calibrate(_sessions(b, seed=5), sources=["s"] * 4)
    assert save(cal_a) != save(cal_b)
    found_a, found_b = find(_sessions(a)[0]), find(_sessions(b)[0])
    assert found_a is not None and found_a.calibration == cal_a
    assert found_b is not None and found_b.calibration == cal_b


def test_a_container_that_cannot_be_told_apart_gets_no_calibration_by_itself() -> None:
    calibration = calibrate(_sessions(CONTAINER_UNKNOWN), sources=["s"] * 4)
    warning = container_warning(calibration)
    assert warning is not None and "\n" not in warning and "--calibration FILE" in warning
    save(calibration)
    assert find(_sessions(CONTAINER_UNKNOWN)[0]) is None  # maybe another container of the image
    assert mismatch(calibration, _sessions(CONTAINER_UNKNOWN)[0]) == []  # a person may still name it
    assert container_warning(calibrate(_sessions(_token(DOCKER_A)), sources=["s"] * 4)) is None


def test_a_container_that_shows_no_id_is_known_by_the_kernel_boot_and_says_so() -> None:
    boot1, boot2 = _token(BOOT_1), _token(BOOT_2)
    calibration = calibrate(_sessions(boot1), sources=["s"] * 4)
    said = container_warning(calibration)
    assert said is not None and "until the host reboots" in said and "--calibration FILE" in said
    save(calibration)
    found = find(_sessions(boot1, seed=7)[0])  # this container (or a sibling on this host), this boot
    assert found is not None and found.calibration == calibration
    assert found.warning is not None and "kernel's boot id only" in found.warning and "\n" not in found.warning
    assert find(_sessions(boot2)[0]) is None  # another host of the image, or after a reboot: cannot tell
    assert mismatch(calibration, _sessions(boot2)[0]) == []  # a person may still name it


def test_an_lxc_container_keeps_its_calibration_for_one_start() -> None:
    first, second = _token(LXC_START_1), _token(LXC_START_2)
    save(calibrate(_sessions(first), sources=["s"] * 4))
    assert find(_sessions(first)[0]) is not None
    assert find(_sessions(second)[0]) is None


def test_older_calibrations_serve_outside_containers_only() -> None:
    old = calibrate(_sessions(None), sources=["s"] * 4)  # from before containers were recorded
    assert old.container == "" and old.host_key == BAKED  # the key it had
    save(old)
    found = find(_sessions(CONTAINER_NONE)[0])
    assert found is not None and found.calibration == old
    assert find(_sessions(_token(DOCKER_A))[0]) is None


def test_sessions_of_two_containers_are_not_one_calibration() -> None:
    mixed = _sessions(_token(DOCKER_A))[:2] + _sessions(_token(DOCKER_B))[:2]
    with pytest.raises(BenchInputError, match="different containers"):
        calibrate(mixed, sources=["s"] * 4)


def test_a_benchmark_records_its_container(monkeypatch: pytest.MonkeyPatch) -> None:
    a = _token(DOCKER_A)
    monkeypatch.setattr(loadgen, "this_container", lambda: a)
    result = LoadSpec(base_url="http://127.0.0.1:1", model="m", concurrency=(1,)).result([], "2026-01-01T00:00:00+00:00")
    assert result.container == a and ID_A not in result.to_json()
    assert BenchResult.model_validate_json(result.to_json()).container == a


def test_calibrate_says_when_its_calibration_will_not_be_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_results(tmp_path, _sessions(CONTAINER_UNKNOWN))
    assert main(["bench", "calibrate", *paths, "--no-transcript", "--no-live"]) == 0
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())  # the terminal wraps it
    assert said.count("container whose id rigaudit cannot read") == 1
    assert "name it with bench compare --calibration FILE" in said


def test_a_crafted_container_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_results(tmp_path, _sessions(_token(DOCKER_A), count=2), first={"container": f"container:{ID_A}"})  # raw id
    assert main(["bench", "compare", *paths, "--no-transcript"]) == 2
    err = capsys.readouterr().err
    assert "container" in err and "Traceback" not in err
