"""A rootless Podman container given its GPUs through CDI (``podman run --device nvidia.com/gpu=all``), as the audit
sees it from inside (``PlatformSpec.container == "podman"``, ``PlatformSpec.rootless_uid``).

From public sources: Podman writes ``/run/.containerenv`` (``engine``, ``name``, ``id``, ``image``, ``imageid``,
``rootless=1``, ``graphRootMounted``: podman-run(1)); a rootless container maps its root to the user's uid
(``/proc/self/uid_map``) and its storage is the user's (``~/.local/share/containers/storage``, native overlay with
``userxattr``); by default systemd delegates only the memory and pids controllers to a user's cgroups (Podman's
rootless troubleshooting), so a rootless container has no cpu or cpuset controller unless the host adds a
``Delegate=`` drop-in; its /dev/shm is 64 MB unless ``--shm-size``; a rootless container cannot raise a resource limit
above the user's hard limit. CDI (NVIDIA Container Toolkit, ``nvidia-ctk cdi generate``): the devices and the driver's
libraries are mounted at their host paths (``/usr/lib64`` on RHEL), the ``update-ldcache`` hook adds that folder to the
container's loader cache; no nvidia-container-runtime hook is involved. The ld.so.conf.d file's name and the storage
ids are of the form those tools write, not read off one host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.hostgen.build import Built

CONTAINER_ID = "c41f9e2a7b3d58e06a1c9f4b2d7e8a3f5c6b1d0e9f8a7b6c5d4e3f2a1b0c9d8e"
IMAGE_ID = "8f3e1d2c4b5a69788a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f"
USER = "svc-llm"
SUBUID_START = 524288


def user_slice(uid: int) -> str:
    """The user's own systemd's slice, where a rootless container's processes are (seen from the host)."""
    return f"/user.slice/user-{uid}.slice/user@{uid}.service/user.slice"


def conmon_argv(uid: int) -> tuple[str, ...]:
    """conmon, the monitor Podman leaves beside each container (podman has no daemon), as ps shows it for a rootless
    container (the storage is the user's; the exit command's options are cut to the ones that name the container)."""
    store = f"/home/{USER}/.local/share/containers/storage/overlay-containers/{CONTAINER_ID}/userdata"
    return (
        "/usr/bin/conmon",
        *("--api-version", "1", "-c", CONTAINER_ID, "-u", CONTAINER_ID, "-r", "/usr/bin/crun", "-b", store),
        *("-p", f"/run/user/{uid}/containers/overlay-containers/{CONTAINER_ID}/userdata/pidfile", "-n", "vllm"),
        *("--exit-dir", f"/run/user/{uid}/libpod/tmp/exits", "--log-path", f"{store}/ctr.log", "--log-driver", "k8s-file"),
        *("--conmon-pidfile", f"/run/user/{uid}/containers/overlay-containers/{CONTAINER_ID}/userdata/conmon.pid"),
        *("--exit-command", "/usr/bin/podman", "--exit-command-arg", "container", "--exit-command-arg", "cleanup"),
    )


def rootless(built: Built) -> bool:
    return built.spec.platform.container == "podman" and built.spec.platform.rootless_uid is not None


def libdir(built: Built) -> str | None:
    """Where the driver's libraries are on a RHEL host and where CDI mounts them in its containers: /usr/lib64; None:
    elsewhere (a distribution's multiarch folder, or an image's own)."""
    if built.container and built.spec.platform.container != "podman":
        return None
    return "/usr/lib64" if built.spec.os.distro.startswith("rhel") else None


def root_mount(built: Built) -> str:
    store = f"/home/{USER}/.local/share/containers/storage/overlay" if rootless(built) else "/var/lib/containers/storage/overlay"
    return (
        f"overlay / overlay rw,relatime,lowerdir={store}/l/7QGZK2M4XH3JW5BTPNRV6DYC2A:{store}/l/MZ4W2QJ7RKX5T3NVB6YCDH8F1E,"
        f"upperdir={store}/{CONTAINER_ID[:12]}e2b7/diff,workdir={store}/{CONTAINER_ID[:12]}e2b7/work,"
        "redirect_dir=nofollow,uuid=on,userxattr 0 0\n"
    )


def containerenv(built: Built) -> str:
    return (
        'engine="podman-4.9.4-rhel"\n'
        'name="vllm"\n'
        f'id="{CONTAINER_ID}"\n'
        'image="docker.io/vllm/vllm-openai:v0.6.4"\n'
        f'imageid="{IMAGE_ID}"\n'
        f"rootless={1 if rootless(built) else 0}\n"
        "graphRootMounted=1\n"
    )


def write_podman(built: Built, pids: tuple[int, ...]) -> None:
    """/run/.containerenv, the user-namespace maps of ``pids`` and the loader entry CDI's hook writes."""
    tree = built.tree
    tree.file("/run/.containerenv", containerenv(built))
    uid = built.spec.platform.rootless_uid
    if uid is not None:
        maps = f"{0:>10} {uid:>10} {1:>10}\n{1:>10} {SUBUID_START:>10} {65536:>10}\n"
        for pid in pids:
            tree.file(f"/proc/{pid}/uid_map", maps)
            tree.file(f"/proc/{pid}/gid_map", maps)
    folder = libdir(built)
    if folder is not None:
        tree.file("/etc/ld.so.conf.d/00-nvcr-2871503946.conf", folder + "\n")
    tree.file("/etc/hosts", f"127.0.0.1\tlocalhost\n::1\tlocalhost\n10.88.0.4\t{tree.hostname} vllm\n")


CONTAINER_DEV = ("null", "zero", "full", "random", "urandom", "tty", "console", "ptmx", "pts", "shm", "mqueue")


def write_host_view(built: Built, pids: dict[int, int]) -> None:
    """What a host shows of its containers' servers (``pids``: pid -> host uid of the container's root): the
    container's /dev under /proc/PID/root (the GPU nodes its runtime gave it; /dev/infiniband where its server uses
    RDMA: ``NCCL_IB_HCA`` in its environment), and a rootless container's user-namespace maps."""
    nodes = [f"nvidia{m}" for m in built.visible_gpu_minors] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
    for pid, uid in pids.items():
        proc = built.procs[pid]
        extra = ["infiniband"] if "NCCL_IB_HCA" in proc.env else []
        for name in (*nodes, *CONTAINER_DEV, *extra):
            built.tree.unreadable[f"/proc/{pid}/root/dev/{name}"] = "NOT_RECORDED"
        if uid:
            maps = f"{0:>10} {uid:>10} {1:>10}\n{1:>10} {SUBUID_START:>10} {65536:>10}\n"
            built.tree.file(f"/proc/{pid}/uid_map", maps)
            built.tree.file(f"/proc/{pid}/gid_map", maps)
