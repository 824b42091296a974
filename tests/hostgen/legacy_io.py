"""Faults of older or partitioned I/O: a container on a cgroup v1 host with a CFS quota, SR-IOV virtual functions
of the ConnectX NICs, swap used by processes other than the servers.

Kept apart from :mod:`tests.hostgen.faults`; each helper returns a changed copy of a description.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.procs import write_proc
from tests.hostgen.spec import Fault, HostSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

V1_CONTROLLERS = (
    (12, "pids"),
    (11, "cpuset"),
    (10, "devices"),
    (9, "memory"),
    (8, "cpu,cpuacct"),
    (7, "blkio"),
    (6, "net_cls,net_prio"),
    (5, "freezer"),
    (4, "hugetlb"),
    (3, "perf_event"),
    (2, "rdma"),
    (1, "name=systemd"),
)
DOCKER_V1 = "/docker/5e8a2b9c7d1f3e4a6b8c0d2e4f6a8b0c1d3e5f7a9b1c3d5e7f9a0b2c4d6e8f0a1b"
V1_MOUNTS = (
    "tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,relatime,mode=755 0 0\n"
    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup ro,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n"
    "cgroup /sys/fs/cgroup/cpuset cgroup ro,nosuid,nodev,noexec,relatime,cpuset 0 0\n"
    "cgroup /sys/fs/cgroup/memory cgroup ro,nosuid,nodev,noexec,relatime,memory 0 0\n"
    "cgroup /sys/fs/cgroup/devices cgroup ro,nosuid,nodev,noexec,relatime,devices 0 0\n"
)


def _named(spec: HostSpec, suffix: str, summary: str, apply: Fault) -> HostSpec:
    return replace(spec, name=f"{spec.name}+{suffix}", summary=f"{spec.summary}; FAULT: {summary}", faults=(*spec.faults, apply))


def cgroup_v1_quota(spec: HostSpec, cpus: int = 4, throttled: tuple[int, int] = (412877, 918234)) -> HostSpec:
    """Inside a Docker container on a cgroup v1 host (Ubuntu 20.04's default): ``--cpus=cpus`` as
    ``cpu.cfs_quota_us``, throttled in ``throttled`` (periods throttled, periods); no ``cpu.max`` anywhere."""

    def apply(built: Built) -> None:
        t = built.tree
        t.remove("/sys/fs/cgroup")
        cpu = "/sys/fs/cgroup/cpu,cpuacct"
        stat = f"nr_periods {throttled[1]}\nnr_throttled {throttled[0]}\nthrottled_time {throttled[0] * 70537000}\n"
        t.attrs(cpu, {"cpu.cfs_quota_us": f"{cpus * 100000}\n", "cpu.cfs_period_us": "100000\n", "cpu.shares": "1024\n"})
        t.attrs(cpu, {"cpu.stat": stat})
        t.link("/sys/fs/cgroup/cpu", "cpu,cpuacct")
        t.link("/sys/fs/cgroup/cpuacct", "cpu,cpuacct")
        t.attrs("/sys/fs/cgroup/cpuset", {"cpuset.cpus": built.all_cpus + "\n", "cpuset.effective_cpus": built.all_cpus + "\n"})
        t.attrs("/sys/fs/cgroup/memory", {"memory.limit_in_bytes": "9223372036854771712\n"})
        t.attrs("/sys/fs/cgroup/devices", {"devices.list": "c 195:* rwm\nc 509:* rwm\nc 1:3 rwm\n"})
        lines = "".join(f"{n}:{c}:{DOCKER_V1}\n" for n, c in V1_CONTROLLERS) + "0::/\n"
        for path in [p for p in t.files if re.match(r"^/proc/(\d+|self)/cgroup$", p)]:
            t.file(path, lines)
        for path in [p for p in t.files if p.startswith("/proc/") and p.endswith("/mounts")]:
            t.file(path, re.sub(r"^cgroup2? /sys/fs/cgroup cgroup2 .*\n", V1_MOUNTS, t.text(path) or "", flags=re.M))

    summary = f"cgroup v1 host; the container's --cpus={cpus} is cpu.cfs_quota_us"
    return _named(spec, f"cgroup-v1-cpus-{cpus}", summary, Fault("cgroup-v1-quota", summary, apply))


def sriov_vfs(spec: HostSpec, per_pf: int = 4) -> HostSpec:
    """``per_pf`` SR-IOV virtual functions on each ConnectX PF, each an RDMA device of its own (``mlx5_N`` after the
    PFs') with its port down, as before a VM or pod is given it."""

    def apply(built: Built) -> None:
        t = built.tree
        count = len(built.rdma_names)
        for k, pf in enumerate(built.rdma_names):
            pf_bdf = built.rdma_bdfs[k]
            ib = posixpath.normpath(posixpath.join("/sys/class/infiniband", t.links[f"/sys/class/infiniband/{pf}"]))
            pf_dir = posixpath.dirname(posixpath.dirname(ib))
            parent = posixpath.dirname(pf_dir)
            t.attrs(pf_dir, {"sriov_totalvfs": "16\n", "sriov_numvfs": f"{per_pf}\n"})
            for v in range(per_pf):
                name = f"mlx5_{count + k * per_pf + v}"
                vf_bdf = pf_bdf[:-1] + str(v + 1)
                vf_dir = f"{parent}/{vf_bdf}"
                copied = {
                    f: t.files[f"{pf_dir}/{f}"]
                    for f in ("vendor", "numa_node", "local_cpulist", "class")
                    if f"{pf_dir}/{f}" in t.files
                }
                t.attrs(vf_dir, {**copied, "device": "0x101e\n"})
                t.link(f"{vf_dir}/physfn", f"../{pf_bdf}")
                t.link(f"{pf_dir}/virtfn{v}", f"../{vf_bdf}")
                t.link(f"/sys/bus/pci/devices/{vf_bdf}", posixpath.relpath(vf_dir, "/sys/bus/pci/devices"))
                t.link(f"{vf_dir}/driver", posixpath.relpath("/sys/bus/pci/drivers/mlx5_core", vf_dir))
                port = {"link_layer": "InfiniBand\n", "state": "1: DOWN\n", "phys_state": "3: Disabled\n"}
                t.attrs(f"{vf_dir}/infiniband/{name}/ports/1", {**port, "rate": "10 Gb/sec (4X SDR)\n", "lid": "0x0\n"})
                guid = f"0000:0000:0000:{k:02x}{v:02x}\n"
                t.attrs(f"{vf_dir}/infiniband/{name}", {"node_type": "1: CA\n", "fw_ver": "28.39.1002\n", "node_guid": guid})
                t.link(f"{vf_dir}/infiniband/{name}/device", "../..")
                t.link(f"/sys/class/infiniband/{name}", posixpath.relpath(f"{vf_dir}/infiniband/{name}", "/sys/class/infiniband"))

    summary = f"{per_pf} SR-IOV VFs per ConnectX PF, each an RDMA device with its port down"
    return _named(spec, f"sriov-{per_pf}-vfs", summary, Fault("sriov-vfs", summary, apply))


def swap_used(spec: HostSpec, used_kib: int = 24 * 2**20, swap_kib: int = 64 * 2**20, server_kib: int = 0) -> HostSpec:
    """``swap_kib`` of swap with ``used_kib`` in use: ``server_kib`` of it by the first server's main process, the
    rest by another process."""

    def apply(built: Built) -> None:
        t = built.tree
        meminfo = t.text("/proc/meminfo") or ""
        t.file("/proc/meminfo", re.sub(r"^SwapFree:\s+\d+ kB", f"SwapFree:       {swap_kib - used_kib} kB", meminfo, flags=re.M))
        argvs = {p.argv for p in built.spec.processes}
        servers = {pid for rows in built.gpu_process_map.values() for pid, *_ in rows}
        servers |= {pid for pid, p in built.procs.items() if p.argv in argvs or p.ppid in servers}
        others = [p for pid, p in sorted(built.procs.items()) if pid > 1 and pid not in servers and not p.kernel_thread]
        for proc in others[:1]:
            proc.swap_kib = used_kib - server_kib
            write_proc(t, proc)
        main = next((p for p in built.procs.values() if p.argv == built.spec.processes[0].argv), None)
        if server_kib and main is not None:
            main.swap_kib = server_kib
            write_proc(t, main)

    who = f"{server_kib // 2**20} GiB of it by a server" if server_kib else "none by the servers"
    summary = f"{used_kib // 2**20} GiB of swap used, {who}"
    suffix = "swap-server" if server_kib else "swap-others"
    return _named(replace(spec, os=replace(spec.os, swap_kib=swap_kib)), suffix, summary, Fault(suffix, summary, apply))
