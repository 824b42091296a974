"""The kernel and the distribution: /proc/version, cmdline, meminfo, vmstat, sysctls, THP, /etc/os-release,
installed kernels and their modules.dep, Secure Boot, and the boot part of the kernel log."""

from __future__ import annotations

import re

from tests.hostgen.spec import OsSpec
from tests.hostgen.tree import Tree

OS_RELEASE = {
    "ubuntu-22.04": (
        'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\n'
        'VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nHOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\nBUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\nUBUNTU_CODENAME=jammy\n'
    ),
    "ubuntu-24.04": (
        'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nVERSION="24.04.1 LTS (Noble Numbat)"\n'
        'VERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nHOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\nBUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\nUBUNTU_CODENAME=noble\n'
        "LOGO=ubuntu-logo\n"
    ),
    "rhel-9.4": (
        'NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (Plow)"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="9.4"\n'
        'PLATFORM_ID="platform:el9"\nPRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"\n'
        'ANSI_COLOR="0;31"\nLOGO="fedora-logo-icon"\n'
        'CPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos"\nHOME_URL="https://www.redhat.com/"\n'
        'DOCUMENTATION_URL="https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/9"\n'
        'BUG_REPORT_URL="https://issues.redhat.com/"\n'
    ),
}
"""Each the file as the distribution ships it."""

_BUILD = {
    "ubuntu-22.04": (
        "buildd@lcy02-amd64-007",
        "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38",
    ),
    "ubuntu-24.04": (
        "buildd@lcy02-amd64-115",
        "x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42",
    ),
    "rhel-9.4": (
        "mockbuild@x86-64-01.build.eng.rdu2.redhat.com",
        "gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3), GNU ld version 2.35.2-43.el9",
    ),
}


def kernel_tuple(release: str) -> tuple[int, int]:
    major, minor = (int(n) for n in re.findall(r"\d+", release)[:2])
    return major, minor


def proc_version(os: OsSpec, arch: str) -> str:
    who, compiler = _BUILD.get(os.distro, _BUILD["ubuntu-22.04"])
    if arch == "aarch64":
        who, compiler = "buildd@bos03-arm64-028", compiler.replace("x86_64-linux-gnu-", "aarch64-linux-gnu-")
    abi = re.search(r"-(\d+)-", os.kernel)
    number = abi.group(1) if abi else "1"
    preempt = " PREEMPT_DYNAMIC" if kernel_tuple(os.kernel) >= (6, 0) else ""
    date = "Mon Apr 15 09:52:04 UTC 2024" if kernel_tuple(os.kernel) < (6, 0) else "Fri Aug 30 12:02:04 UTC 2024"
    if os.distro.startswith("rhel"):
        return f"Linux version {os.kernel} ({who}) ({compiler}) #1 SMP{preempt} Wed Apr 10 10:44:08 EDT 2024\n"
    return f"Linux version {os.kernel} ({who}) ({compiler}) #{number}-Ubuntu SMP{preempt} {date}\n"


def cmdline(os: OsSpec) -> str:
    root = "root=UUID=6f2c3f0e-8a1b-4b7e-9a77-3c1d0e5b9a21 ro"
    return f"BOOT_IMAGE=/boot/vmlinuz-{os.kernel} {root} {os.cmdline}".strip() + "\n"


def meminfo(total: int, swap: int) -> str:
    free = total * 91 // 100
    rows = [
        ("MemTotal", total),
        ("MemFree", free),
        ("MemAvailable", total * 95 // 100),
        ("Buffers", 1204588),
        ("Cached", total // 40),
        ("SwapCached", 0),
        ("Active", total // 30),
        ("Inactive", total // 45),
        ("Active(anon)", total // 60),
        ("Inactive(anon)", 41236),
        ("Active(file)", total // 70),
        ("Inactive(file)", total // 50),
        ("Unevictable", 31540),
        ("Mlocked", 27640),
        ("SwapTotal", swap),
        ("SwapFree", swap),
        ("Zswap", 0),
        ("Zswapped", 0),
        ("Dirty", 412),
        ("Writeback", 0),
        ("AnonPages", total // 62),
        ("Mapped", 3145728),
        ("Shmem", 412856),
        ("KReclaimable", 2407716),
        ("Slab", 5342980),
        ("SReclaimable", 2407716),
        ("SUnreclaim", 2935264),
        ("KernelStack", 88384),
        ("PageTables", 96420),
        ("SecPageTables", 0),
        ("NFS_Unstable", 0),
        ("Bounce", 0),
        ("WritebackTmp", 0),
        ("CommitLimit", total // 2 + swap),
        ("Committed_AS", total // 20),
        ("VmallocTotal", 13743895347199),
        ("VmallocUsed", 1406332),
        ("VmallocChunk", 0),
        ("Percpu", 372736),
        ("HardwareCorrupted", 0),
        ("AnonHugePages", 2048000),
        ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0),
        ("FileHugePages", 0),
        ("FilePmdMapped", 0),
        ("Unaccepted", 0),
        ("HugePages_Total", 0),
        ("HugePages_Free", 0),
        ("HugePages_Rsvd", 0),
        ("HugePages_Surp", 0),
        ("Hugepagesize", 2048),
        ("Hugetlb", 0),
        ("DirectMap4k", 1631468),
        ("DirectMap2M", 96282624),
        ("DirectMap1G", total - total % 1048576),
    ]
    out = []
    for key, value in rows:
        if key.startswith("HugePages_"):
            out.append(f"{key + ':':<16}{value:>8}\n")
        else:
            out.append(f"{key + ':':<16}{value:>8} kB\n")
    return "".join(out)


def vmstat(total_kib: int) -> str:
    pages = total_kib // 4
    rows = {
        "nr_free_pages": pages * 91 // 100,
        "nr_zone_inactive_anon": 10309,
        "nr_zone_active_anon": pages // 60,
        "nr_mlock": 6910,
        "nr_dirtied": 12094561,
        "nr_written": 11920132,
        "numa_hit": 9821654321,
        "numa_miss": 0,
        "numa_foreign": 0,
        "numa_interleave": 81232,
        "numa_local": 9821650001,
        "numa_other": 4320,
        "pgpgin": 51234512,
        "pgpgout": 91823412,
        "pswpin": 0,
        "pswpout": 0,
        "pgfault": 2912345678,
        "pgmajfault": 41234,
        "numa_pte_updates": 0,
        "numa_huge_pte_updates": 0,
        "numa_hint_faults": 0,
        "numa_hint_faults_local": 0,
        "numa_pages_migrated": 0,
        "pgmigrate_success": 1234,
        "pgmigrate_fail": 0,
        "compact_migrate_scanned": 0,
        "compact_free_scanned": 0,
        "compact_isolated": 0,
        "compact_stall": 0,
        "compact_fail": 0,
        "compact_success": 0,
        "compact_daemon_wake": 12,
        "thp_fault_alloc": 81234,
        "thp_fault_fallback": 0,
        "thp_collapse_alloc": 1523,
        "thp_split_pmd": 412,
        "thp_zero_page_alloc": 1,
    }
    return "".join(f"{k} {v}\n" for k, v in rows.items())


def _selected(options: list[str], chosen: str) -> str:
    return " ".join(f"[{o}]" if o == chosen else o for o in options) + "\n"


def modules_dep(release: str, modules: list[str], *, zstd: bool) -> str:
    """A modules.dep that lists the in-tree modules a GPU server loads plus ``modules`` (``path: deps``)."""
    ext = ".ko.zst" if zstd else ".ko"
    base = [
        "kernel/drivers/infiniband/core/ib_core",
        "kernel/drivers/infiniband/core/ib_uverbs: kernel/drivers/infiniband/core/ib_core",
        (
            "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core: kernel/drivers/net/ethernet/mellanox/mlxfw/mlxfw "
            "kernel/net/psample/psample"
        ),
        (
            "kernel/drivers/infiniband/hw/mlx5/mlx5_ib: kernel/drivers/infiniband/core/ib_uverbs "
            "kernel/drivers/infiniband/core/ib_core kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core"
        ),
        "kernel/drivers/net/ethernet/mellanox/mlxfw/mlxfw",
        "kernel/net/psample/psample",
        (
            "kernel/drivers/gpu/drm/nouveau/nouveau: kernel/drivers/gpu/drm/drm_ttm_helper "
            "kernel/drivers/gpu/drm/ttm/ttm kernel/drivers/gpu/drm/display/drm_display_helper"
        ),
        "kernel/drivers/gpu/drm/drm_ttm_helper: kernel/drivers/gpu/drm/ttm/ttm",
        "kernel/drivers/gpu/drm/ttm/ttm",
        "kernel/drivers/gpu/drm/display/drm_display_helper",
        "kernel/drivers/vfio/vfio: kernel/drivers/vfio/vfio_iommu_type1",
        "kernel/drivers/vfio/vfio_iommu_type1",
        "kernel/drivers/vfio/pci/vfio-pci: kernel/drivers/vfio/pci/vfio-pci-core kernel/drivers/vfio/vfio",
        "kernel/drivers/vfio/pci/vfio-pci-core: kernel/drivers/vfio/vfio",
        "kernel/drivers/nvme/host/nvme: kernel/drivers/nvme/host/nvme-core",
        "kernel/drivers/nvme/host/nvme-core",
        "kernel/drivers/net/ethernet/intel/ice/ice",
        "kernel/fs/overlayfs/overlay",
        "kernel/net/bridge/br_netfilter: kernel/net/bridge/bridge kernel/net/802/stp kernel/net/llc/llc",
        "kernel/drivers/cpufreq/acpi-cpufreq",
        "kernel/drivers/hwmon/coretemp",
        "kernel/drivers/edac/skx_edac: kernel/drivers/edac/skx_edac_common",
        "kernel/drivers/edac/skx_edac_common",
        "kernel/drivers/edac/amd64_edac",
        "kernel/arch/x86/kvm/kvm",
        "kernel/arch/x86/kvm/kvm-intel: kernel/arch/x86/kvm/kvm",
        "kernel/arch/x86/kvm/kvm-amd: kernel/arch/x86/kvm/kvm",
        "kernel/drivers/infiniband/hw/efa/efa: kernel/drivers/infiniband/core/ib_uverbs kernel/drivers/infiniband/core/ib_core",
    ]
    lines = []
    for entry in [*base, *modules]:
        path, _, deps = entry.partition(":")
        dep_text = " ".join(d + ext for d in deps.split())
        lines.append(f"{path}{ext}:{(' ' + dep_text) if dep_text else ''}")
    return "\n".join(lines) + "\n"


def write_kernel(tree: Tree, os: OsSpec, *, arch: str, boot_log: list[str]) -> None:
    release = os.kernel
    tree.file("/proc/version", proc_version(os, arch))
    tree.file("/proc/cmdline", cmdline(os))
    tree.file("/proc/meminfo", meminfo(os.memory_kib, os.swap_kib))
    tree.file("/proc/vmstat", vmstat(os.memory_kib))
    tree.file(
        "/proc/swaps",
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        + (f"/swap.img                               file\t\t{os.swap_kib}\t\t0\t\t-2\n" if os.swap_kib else ""),
    )
    tree.attrs(
        "/proc/sys/kernel",
        {
            "osrelease": release,
            "ostype": "Linux",
            "numa_balancing": os.numa_balancing,
            "dmesg_restrict": 0,
            "perf_event_paranoid": 4 if os.distro.startswith("ubuntu") else 2,
            "pid_max": 4194304,
            "threads-max": 8255462,
            "sched_autogroup_enabled": 1,
        },
    )
    tree.attrs(
        "/proc/sys/vm",
        {
            "swappiness": os.swappiness,
            "zone_reclaim_mode": os.zone_reclaim,
            "overcommit_memory": 0,
            "max_map_count": 1048576 if os.distro == "ubuntu-24.04" else 65530,
            "dirty_ratio": 20,
            "dirty_background_ratio": 10,
            "min_free_kbytes": 90112,
            "nr_hugepages": 0,
            "stat_interval": 1,
        },
    )
    tree.attrs(
        "/proc/sys/fs", {"file-nr": "19968\t0\t9223372036854775807", "file-max": 9223372036854775807, "nr_open": 1073741816}
    )
    thp = "/sys/kernel/mm/transparent_hugepage"
    tree.attrs(
        thp,
        {
            "enabled": _selected(["always", "madvise", "never"], os.thp).rstrip("\n"),
            "defrag": _selected(["always", "defer", "defer+madvise", "madvise", "never"], os.thp_defrag).rstrip("\n"),
            "use_zero_page": 1,
            "hpage_pmd_size": 2097152,
            "shmem_enabled": "always within_size advise [never] deny force",
        },
    )
    tree.attrs(f"{thp}/khugepaged", {"defrag": 1, "pages_to_scan": 4096, "max_ptes_none": 511})
    for size in (2048, 1048576):
        tree.attrs(
            f"/sys/kernel/mm/hugepages/hugepages-{size}kB",
            {"nr_hugepages": 0, "free_hugepages": 0, "resv_hugepages": 0, "surplus_hugepages": 0, "nr_overcommit_hugepages": 0},
        )
    tree.file("/etc/os-release", OS_RELEASE.get(os.distro, OS_RELEASE["ubuntu-22.04"]))
    tree.file("/etc/hostname", tree.hostname + "\n")
    if os.efi:
        tree.directory("/sys/firmware/efi")
        tree.file(
            "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
            bytes([6, 0, 0, 0, 1 if os.secure_boot else 0]),
        )
        tree.file("/sys/firmware/efi/fw_platform_size", "64\n")
    tree.file(
        "/sys/kernel/security/lockdown",
        "none [integrity] confidentiality\n" if os.secure_boot else "[none] integrity confidentiality\n",
    )
    tree.file("/sys/kernel/mm/ksm/run", "0\n")
    tree.file(
        "/etc/default/grub",
        (
            "GRUB_DEFAULT=0\nGRUB_TIMEOUT_STYLE=hidden\n"
            "GRUB_TIMEOUT=0\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo "
            f'Debian`\nGRUB_CMDLINE_LINUX_DEFAULT="{os.cmdline}"\n'
            'GRUB_CMDLINE_LINUX=""\n'
        ),
    )
    tree.file(
        "/etc/modprobe.d/blacklist-framebuffer.conf",
        "blacklist aty128fb\nblacklist atyfb\nblacklist radeonfb\nblacklist cirrusfb\n",
    )
    tree.file("/etc/sysctl.conf", "#kernel.domainname = example.com\n#net.ipv4.ip_forward=1\n")
    for kernel in (release, *os.old_kernels):
        tree.file(f"/boot/vmlinuz-{kernel}", b"\x4d\x5a")
        tree.file(
            f"/boot/config-{kernel}",
            "CONFIG_X86_AMD_PSTATE=y\nCONFIG_X86_INTEL_PSTATE=y\n"
            if kernel_tuple(kernel) >= (5, 17)
            else "CONFIG_X86_INTEL_PSTATE=y\n",
        )
    tree.command(("uname", "-r"), release + "\n")
    tree.command(("uname", "-a"), f"Linux {tree.hostname} {release} #1 SMP {arch} {arch} {arch} GNU/Linux\n")
    del boot_log


def dmesg_text(lines: list[tuple[float, str]]) -> str:
    return "".join(f"[{t:12.6f}] {text}\n" for t, text in sorted(lines, key=lambda x: x[0]))
