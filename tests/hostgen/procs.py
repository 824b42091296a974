"""Processes under /proc/PID: comm, cmdline, stat, status, environ, cgroup, limits, mounts, mountinfo, maps,
and the ns/mnt and exe links, as a root reader sees them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.hostgen.tree import Tree

LIMITS_ROWS = (
    ("Max cpu time", "unlimited", "unlimited", "seconds"),
    ("Max file size", "unlimited", "unlimited", "bytes"),
    ("Max data size", "unlimited", "unlimited", "bytes"),
    ("Max stack size", "8388608", "unlimited", "bytes"),
    ("Max core file size", "0", "unlimited", "bytes"),
    ("Max resident set", "unlimited", "unlimited", "bytes"),
    ("Max processes", "{nproc}", "{nproc}", "processes"),
    ("Max open files", "{nofile_soft}", "{nofile_hard}", "files"),
    ("Max locked memory", "{memlock}", "{memlock}", "bytes"),
    ("Max address space", "unlimited", "unlimited", "bytes"),
    ("Max file locks", "unlimited", "unlimited", "locks"),
    ("Max pending signals", "{nproc}", "{nproc}", "signals"),
    ("Max msgqueue size", "819200", "819200", "bytes"),
    ("Max nice priority", "0", "0", ""),
    ("Max realtime priority", "0", "0", ""),
    ("Max realtime timeout", "unlimited", "unlimited", "us"),
)


def limits_text(*, memlock: str = "unlimited", nofile: tuple[int, int] = (1048576, 1048576), nproc: int = 8255462) -> str:
    lines = [f"{'Limit':<26}{'Soft Limit':<21}{'Hard Limit':<21}{'Units':<10}"]
    for name, soft, hard, unit in LIMITS_ROWS:
        values = {"nproc": nproc, "nofile_soft": nofile[0], "nofile_hard": nofile[1], "memlock": memlock}
        lines.append(f"{name:<26}{soft.format(**values):<21}{hard.format(**values):<21}{unit:<10}")
    return "\n".join(lines) + "\n"


@dataclass
class Proc:
    pid: int
    argv: tuple[str, ...]
    comm: str = ""
    ppid: int = 1
    state: str = "S"
    uid: int = 0
    threads: int = 1
    env: dict[str, str] = field(default_factory=dict)
    cgroup: str = "0::/system.slice\n"
    kernel_thread: bool = False
    limits: str | None = None
    mounts: str | None = None
    mountinfo: str | None = None
    maps: str | None = None
    exe: str | None = None
    mnt_ns: str = "mnt:[4026531841]"
    vm_kib: int = 0
    cpus: str = "0-1"
    """Cpus_allowed_list."""
    mems: str = "0"
    swap_kib: int = 0
    """VmSwap: what of it is swapped out."""
    start_ticks: int = 1842
    """When it started, in clock ticks (1/100 s) since boot: /proc/PID/stat's field 22."""

    @property
    def name(self) -> str:
        return (self.comm or (self.argv[0].rsplit("/", 1)[-1] if self.argv else "?"))[:15]


def write_proc(tree: Tree, proc: Proc) -> None:
    base = f"/proc/{proc.pid}"
    name = proc.name
    tree.file(f"{base}/comm", name + "\n")
    tree.file(f"{base}/cmdline", b"".join(a.encode() + b"\x00" for a in proc.argv))
    flags = 0x00208040 if proc.kernel_thread else 0x00400100
    tree.file(
        f"{base}/stat",
        f"{proc.pid} ({name}) {proc.state} {proc.ppid} {proc.pid} {proc.pid} 0 -1 {flags} 1523 0 12 0 41 18 0 0 20 0 "
        f"{proc.threads} 0 {proc.start_ticks} {proc.vm_kib * 1024} {proc.vm_kib // 16} 18446744073709551615 "
        "0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
    )
    status = [
        f"Name:\t{name}",
        "Umask:\t0022",
        f"State:\t{proc.state} ({'sleeping' if proc.state == 'S' else 'running'})",
        f"Tgid:\t{proc.pid}",
        "Ngid:\t0",
        f"Pid:\t{proc.pid}",
        f"PPid:\t{proc.ppid}",
        "TracerPid:\t0",
        f"Uid:\t{proc.uid}\t{proc.uid}\t{proc.uid}\t{proc.uid}",
        f"Gid:\t{proc.uid}\t{proc.uid}\t{proc.uid}\t{proc.uid}",
        "FDSize:\t256",
        "Groups:\t",
        f"NStgid:\t{proc.pid}",
        f"NSpid:\t{proc.pid}",
        f"NSpgid:\t{proc.pid}",
        f"NSsid:\t{proc.pid}",
    ]
    if not proc.kernel_thread:
        status += [
            f"VmPeak:\t{proc.vm_kib + 4096:>8} kB",
            f"VmSize:\t{proc.vm_kib:>8} kB",
            "VmLck:\t       0 kB",
            "VmPin:\t       0 kB",
            f"VmHWM:\t{proc.vm_kib // 12:>8} kB",
            f"VmRSS:\t{proc.vm_kib // 14:>8} kB",
            f"VmSwap:\t{proc.swap_kib:>8} kB",
        ]
    status += [
        f"Threads:\t{proc.threads}",
        "SigQ:\t0/8255462",
        "CapEff:\t000001ffffffffff" if proc.uid == 0 else "CapEff:\t0000000000000000",
        "Seccomp:\t0",
        f"Cpus_allowed_list:\t{proc.cpus}",
        f"Mems_allowed_list:\t{proc.mems}",
        "voluntary_ctxt_switches:\t1204",
        "nonvoluntary_ctxt_switches:\t38",
    ]
    tree.file(f"{base}/status", "\n".join(status) + "\n")
    tree.file(f"{base}/cgroup", proc.cgroup)
    tree.file(f"{base}/environ", b"".join(f"{k}={v}".encode() + b"\x00" for k, v in proc.env.items()))
    tree.file(f"{base}/limits", proc.limits or limits_text())
    if proc.mounts is not None:
        tree.file(f"{base}/mounts", proc.mounts)
    if proc.mountinfo is not None:
        tree.file(f"{base}/mountinfo", proc.mountinfo)
    if proc.maps is not None:
        tree.file(f"{base}/maps", proc.maps)
    tree.file(f"{base}/oom_score_adj", "0\n")
    tree.link(f"{base}/ns/mnt", proc.mnt_ns)
    tree.link(f"{base}/ns/pid", "pid:[4026531836]")
    if proc.exe is not None:
        tree.link(f"{base}/exe", proc.exe)
    tree.directory(f"{base}/fd")
    tree.directory(f"{base}/task")


KERNEL_THREADS = (
    "kthreadd",
    "pool_workqueue_release",
    "kworker/R-rcu_g",
    "kworker/R-rcu_p",
    "kworker/R-slub_",
    "kworker/R-netns",
    "kworker/0:0H-events_highpri",
    "ksoftirqd/0",
    "rcu_preempt",
    "migration/0",
    "idle_inject/0",
    "cpuhp/0",
    "kdevtmpfs",
    "kworker/R-inet_",
    "kauditd",
    "khungtaskd",
    "oom_reaper",
    "kworker/R-write",
    "kcompactd0",
    "ksmd",
    "khugepaged",
    "kworker/R-kinte",
    "kworker/R-kbloc",
    "kworker/R-blkcg",
    "irq/9-acpi",
    "kswapd0",
    "ecryptfs-kthread",
    "kworker/R-kthro",
    "kworker/R-nvme-",
    "jbd2/nvme0n1p2-8",
    "nv_queue",
    "nv_open_q",
    "nvidia-modeset/kthread_q",
    "UVM global queue",
    "UVM deferred release queue",
    "UVM Tools Event Queue",
)
