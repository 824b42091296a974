"""What says a process runs in a container: the one reading of the files engines and the kernel leave.

The audit's platform layers (:mod:`rigaudit.agents.facts.platform`), the container a benchmark's load came from
(:func:`rigaudit.tools.bench.machine.container_token`) and the container a server process runs in all read these
signs here, so they never disagree on whether there is a container. Signs: systemd-detect-virt's answer,
``container=`` in the environment, ``/run/.containerenv`` (Podman), ``/dev/.lxc-boot-id`` (LXC), a cgroup path
that names a runtime, the runtime's volumes in mountinfo, ``/.dockerenv``, ``KUBERNETES_SERVICE_HOST`` and the
service-account secrets. ``/.dockerenv`` alone on a system booted from a block device with a devtmpfs ``/dev`` is a
VM or machine image built with Docker, not a container.

Pure functions of file contents (nothing here reads a host); the patterns are strings ``re`` compiles on first use
(the gate imports this module).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rigaudit.tools.core.record import Record

CGROUP_RUNTIMES: tuple[tuple[str, str], ...] = (
    (r"kubepods", "kubernetes"),
    (r"/crio-|crio-[0-9a-f]{12}", "kubernetes"),
    (r"cri-containerd|/containerd/|containerd-[0-9a-f]{12}|nerdctl-[0-9a-f]{12}", "containerd"),
    (r"libpod-|/libpod_parent", "podman"),
    (r"docker[-/][0-9a-f]{12}|/docker/", "docker"),
    (r"/lxc\.payload|/lxc/|lxc\.monitor", "lxc"),
    (r"/garden/|garden-[0-9a-f]{8}", "garden"),
)
"""A pattern of a ``/proc/PID/cgroup`` path and the runtime it names (first match wins)."""
ENGINE_ID = r"(?<![0-9a-f])([0-9a-f]{64})(?![0-9a-f])"
"""The 64-hex id Docker, Podman, containerd and CRI-O give a container."""
_CONTAINER_IDS = (
    (r"/lxc(?:\.payload)?[./](\d+)", "lxc"),
    (r"kubepods.*?pod([0-9a-f]{8})[0-9a-f_-]*", "k8s pod"),
    (r"docker[-/]([0-9a-f]{12})", "docker"),
    (r"libpod-([0-9a-f]{12})", "podman"),
)
KUBE_SECRETS = "/var/run/secrets/kubernetes.io"
SERVICE_HOST = "KUBERNETES_SERVICE_HOST"

CONTAINER_NAMES = {
    "lxc": "lxc",
    "lxc-libvirt": "lxc",
    "docker": "docker",
    "podman": "podman",
    "systemd-nspawn": "systemd-nspawn",
    "openvz": "openvz",
    "wsl": "wsl",
    "proot": "proot",
    "pouch": "pouch",
    "rkt": "rkt",
    "container-other": "other",
}
"""systemd-detect-virt's container answers -> the runtime they name."""


def cgroup_runtime(text: str | None) -> str | None:
    """The container runtime a ``/proc/PID/cgroup`` path names; None for the root cgroup ``0::/`` or a host path."""
    for line in (text or "").splitlines():
        path = line.rsplit(":", 1)[-1]
        for pattern, runtime in CGROUP_RUNTIMES:
            if re.search(pattern, path):
                return runtime
    return None


def cgroup_engine_id(text: str | None) -> str | None:
    """The engine's 64-hex container id in a cgroup path that names a runtime (visible where the cgroup namespace is
    the host's)."""
    for line in (text or "").splitlines():
        path = line.split(":", 2)[-1]
        if cgroup_runtime(path) and (found := re.search(ENGINE_ID, path)):
            return found.group(1)
    return None


def cgroup_container(text: str | None) -> str | None:
    """``docker 5e8a2b9c7d1f``, ``k8s pod 1a2b3c4d``, ``lxc 101``, ``podman ...``: the container a process's cgroup
    names, as a person reads it; None outside one."""
    for pattern, kind in _CONTAINER_IDS:
        if match := re.search(pattern, text or ""):
            return f"{kind} {match.group(1)}"
    return None


class Mounts(Record):
    """What ``/proc/mounts`` and ``/proc/self/mountinfo`` say about the root, /dev and the bind mounts."""

    root_source: str | None
    root_type: str | None
    dev_type: str | None
    bind_roots: tuple[str, ...]
    """``root`` fields of mountinfo (the path inside its filesystem a mount shows): kubelet and docker paths."""
    lib_mounts: frozenset[str] = frozenset()
    """Mount points of NVIDIA user-space libraries (``/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15``): files the
    NVIDIA container toolkit binds from the host, one mount a library, so their version is the host's."""

    @property
    def root_on_block_device(self) -> bool:
        """``/`` mounted from a disk (``/dev/vda``, ``/dev/nvme0n1p2``), not an overlay or a container's subvolume."""
        return bool(self.root_source and self.root_source.startswith("/dev/") and self.root_type not in ("overlay", "tmpfs"))

    @property
    def full_dev(self) -> bool:
        """``/dev`` is the kernel's devtmpfs, as on a booted system; containers get a tmpfs with a few nodes."""
        return self.dev_type == "devtmpfs"

    def runtime(self) -> str | None:
        """The container runtime the mounts reveal (kubelet pod volumes, docker's per-container files)."""
        roots = " ".join(self.bind_roots)
        if "/kubelet/pods/" in roots:
            return "kubernetes"
        if "/docker/containers/" in roots:
            return "docker"
        if "/containers/storage/" in roots or "/libpod/" in roots:
            return "podman"
        if self.root_type == "overlay" and "containerd" in roots:
            return "containerd"
        return None


def parse_mounts(mounts: str | None, mountinfo: str | None) -> Mounts:
    root_source = root_type = dev_type = None
    libs: set[str] = set()
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and re.search(r"/lib(?:nvidia-[a-z-]+|cuda)\.so\.[0-9.]+$", fields[1]) and len(libs) < 256:
            libs.add(fields[1])
        if len(fields) >= 3 and fields[1] == "/":
            root_source, root_type = fields[0], fields[2]
        elif len(fields) >= 3 and fields[1] == "/dev":
            dev_type = fields[2]
    roots = []
    for line in (mountinfo or "").splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[3] != "/":
            roots.append(fields[3])
    return Mounts(root_source, root_type, dev_type, tuple(roots[:256]), frozenset(libs))


def containerenv_engine(text: str | None) -> str | None:
    """``engine="podman-4.9.3"`` of ``/run/.containerenv`` -> ``podman``."""
    match = re.search(r'^engine="([a-z]+)', text or "", re.MULTILINE)
    return match.group(1) if match else ("podman" if text is not None else None)


class Signs(Record):
    """What was read. ``environ``: PID 1's environment for the audit; the process's own for a benchmark."""

    dockerenv: bool
    containerenv: str | None
    """``/run/.containerenv``'s text (``""`` when it exists empty or unreadable); None when absent."""
    lxc_boot_id: bool
    environ: Mapping[str, str]
    init_cgroup: str | None
    self_cgroup: str | None
    mounts: Mounts
    kube_secrets: bool = False
    detected: str | None = None
    """systemd-detect-virt's container answer (``--container``, else the plain one when it names a container)."""
    detected_ref: str = "cmd:systemd-detect-virt --container"
    environ_ref: str = "file:/proc/1/environ"


class Sign(Record):
    runtime: str
    how: str
    refs: tuple[str, ...]


def container_signs(s: Signs) -> tuple[tuple[Sign, ...], str | None]:
    """Every sign of a container, strongest first, and a note on a marker that was set aside (or None)."""
    found: list[Sign] = []
    if s.detected and s.detected != "none":
        found.append(Sign(CONTAINER_NAMES.get(s.detected, "other"), f"systemd-detect-virt: {s.detected}", (s.detected_ref,)))
    if env := s.environ.get("container"):
        name = "lxc" if env.startswith("lxc") else CONTAINER_NAMES.get(env, env)
        found.append(Sign(name, f"container={env} in {_whose(s)} environment", (s.environ_ref,)))
    if s.containerenv is not None:
        engine = containerenv_engine(s.containerenv) or "podman"
        found.append(Sign(engine, "/run/.containerenv exists", ("exists:/run/.containerenv",)))
    if s.lxc_boot_id:
        found.append(Sign("lxc", "/dev/.lxc-boot-id exists", ("exists:/dev/.lxc-boot-id",)))
    if cgroup := cgroup_runtime(s.init_cgroup) or cgroup_runtime(s.self_cgroup):
        ref = "file:/proc/1/cgroup" if cgroup_runtime(s.init_cgroup) else "file:/proc/self/cgroup"
        found.append(Sign(cgroup, f"the cgroup path names {cgroup}", (ref,)))
    if mounts := s.mounts.runtime():
        found.append(Sign(mounts, f"the mounts show {mounts}'s volumes", ("file:/proc/self/mountinfo",)))
    note = None
    if s.dockerenv:
        if s.mounts.root_on_block_device and s.mounts.full_dev and not found:
            note = (
                f"/.dockerenv exists, but / is the block device {s.mounts.root_source} and /dev the kernel's devtmpfs: "
                "a system booted from an image built with Docker, not a container"
            )
        else:
            found.append(Sign("docker", "/.dockerenv exists", ("exists:/.dockerenv",)))
    if SERVICE_HOST in s.environ:
        found.append(Sign("kubernetes", f"{SERVICE_HOST} in {_whose(s)} environment", (s.environ_ref,)))
    if s.kube_secrets:
        found.append(Sign("kubernetes", f"{KUBE_SECRETS} exists", (f"exists:{KUBE_SECRETS}",)))
    return tuple(found), note


def _whose(s: Signs) -> str:
    return "PID 1's" if s.environ_ref.endswith("/proc/1/environ") else "this process's"
