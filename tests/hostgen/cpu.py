"""CPU and NUMA topology: /proc/cpuinfo, /sys/devices/system/cpu (cpufreq policies, cpuidle, CPPC) and
/sys/devices/system/node, as the kernel writes them for Intel, AMD and Arm (Neoverse) servers.

Logical CPUs are numbered as Linux enumerates x86 servers: every core's first thread (socket 0, then
socket 1...), then every core's second thread; NUMA nodes (SNC / NPS) split each socket's cores evenly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.hostgen.tree import Tree

CPU = "/sys/devices/system/cpu"
NODE = "/sys/devices/system/node"


@dataclass(frozen=True)
class IdleState:
    name: str
    desc: str
    latency: int
    residency: int
    disabled: bool = False


INTEL_IDLE_SPR = (
    IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    IdleState("C1", "MWAIT 0x00", 1, 1),
    IdleState("C1E", "MWAIT 0x01", 2, 4),
    IdleState("C6", "MWAIT 0x20", 290, 800),
)
INTEL_IDLE_ICX = (
    IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    IdleState("C1", "MWAIT 0x00", 1, 1),
    IdleState("C1E", "MWAIT 0x01", 4, 4),
    IdleState("C6", "MWAIT 0x20", 170, 600),
)
ACPI_IDLE_AMD = (
    IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    IdleState("C1", "ACPI FFH MWAIT 0x0", 1, 2),
    IdleState("C2", "ACPI IOPORT 0x814", 400, 800),
)
ACPI_IDLE_VM = (
    IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    IdleState("C1", "ACPI HLT", 1, 2),
)
HALTPOLL = (
    IdleState("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
    IdleState("haltpoll", "cpuidle-haltpoll idle", 1, 1),
)
PSCI_IDLE_GRACE = (
    IdleState("WFI", "ARM WFI", 1, 1),
    IdleState("c1", "c1", 10, 100),
)


@dataclass(frozen=True)
class CpuSpec:
    vendor: str
    """``intel``, ``amd`` or ``arm``."""
    model_name: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int = 2
    nodes_per_socket: int = 1
    family: int = 6
    model: int = 143
    stepping: int = 8
    microcode: str = "0x2b000590"
    base_mhz: int = 2000
    max_mhz: int = 3800
    min_mhz: int = 800
    cache_kb: int = 107520
    flags: str = ""
    bugs: str = "spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb"
    address_sizes: str = "46 bits physical, 57 bits virtual"
    freq_driver: str | None = "intel_pstate"
    """``intel_pstate``, ``intel_cpufreq`` (intel_pstate passive), ``amd-pstate-epp``, ``amd-pstate``,
    ``acpi-cpufreq``, ``cppc_cpufreq``, or None (no cpufreq: most VM guests)."""
    governor: str = "performance"
    epp: str = "performance"
    boost: bool | None = True
    idle_driver: str | None = "intel_idle"
    idle_governor: str = "menu"
    idle_states: tuple[IdleState, ...] = INTEL_IDLE_SPR
    cppc: bool = False
    """ACPI CPPC objects present (``cpuN/acpi_cppc``)."""
    hypervisor: bool = False
    memory_kib_per_node: tuple[int, ...] = ()
    """MemTotal per NUMA node (kB); the default spreads ``total_kib`` evenly."""
    extra_nodes: tuple[tuple[int, int], ...] = ()
    """Memory-only NUMA nodes: (node id, MemTotal kB), e.g. the GPU memory of a Grace Hopper superchip."""
    online_cpus: str | None = None
    bogomips: float = 4000.0
    distances: tuple[tuple[int, ...], ...] = ()
    arm_parts: tuple[str, ...] = ()
    """Arm: the ``CPU part`` of each CPU in order (a big.LITTLE SoC's two core types); empty: Neoverse V2 (0xd4f)."""

    @property
    def logical(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    @property
    def nodes(self) -> int:
        return self.sockets * self.nodes_per_socket


INTEL_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe "
    "syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf "
    "tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 "
    "x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cat_l2 "
    "cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad "
    "fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb "
    "intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total "
    "cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd dtherm ida "
    "arat pln pts hwp hwp_act_window hwp_epp hwp_pkg_req "
    "vnmi avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq "
    "avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 "
    "rdpid bus_lock_detect cldemote movdiri movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr ibt amx_bf16 "
    "avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities"
)
AMD_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext "
    "fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good amd_lbr_v2 nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni "
    "pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm "
    "extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext "
    "perfctr_llc mwaitx cpb cat_l3 cdp_l3 invpcid_single hw_pstate ssbd mba perfmon_v2 ibrs ibpb stibp ibrs_enhanced vmmcall "
    "fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd "
    "sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local avx512_bf16 "
    "clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin cppc arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid "
    "decodeassists pausefilter pfthreshold avic v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi avx512vbmi umip pku ospke "
    "avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq la57 rdpid overflow_recov succor smca fsrm "
    "flush_l1d"
)
AMD_ZEN3_FLAGS = (
    AMD_FLAGS.replace(" avx512f avx512dq", "")
    .replace(" avx512ifma", "")
    .replace(" avx512cd", "")
    .replace(" avx512bw avx512vl", "")
    .replace(" avx512_bf16", "")
    .replace(" avx512vbmi", "")
    .replace(" avx512_vbmi2", "")
    .replace(" avx512_vnni avx512_bitalg avx512_vpopcntdq la57", "")
)
ARM_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 "
    "asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 "
    "svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti"
)


def cpulist(cpus: list[int]) -> str:
    """``0-55,112-167`` from a list of CPU numbers."""
    if not cpus:
        return ""
    ordered = sorted(cpus)
    ranges: list[str] = []
    start = prev = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(f"{start}-{prev}" if start != prev else str(start))
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def cpumask(cpus: list[int], total: int) -> str:
    """The hex mask sysfs writes (32-bit words separated by commas, most significant first)."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    words = max(1, (total + 31) // 32)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


@dataclass(frozen=True)
class Layout:
    """Where each logical CPU sits: socket, core, thread, NUMA node."""

    socket: dict[int, int] = field(default_factory=dict)
    core: dict[int, int] = field(default_factory=dict)
    thread: dict[int, int] = field(default_factory=dict)
    node: dict[int, int] = field(default_factory=dict)

    def cpus_of_node(self, node: int) -> list[int]:
        return [c for c, n in self.node.items() if n == node]

    def cpus_of_socket(self, socket: int) -> list[int]:
        return [c for c, s in self.socket.items() if s == socket]


def layout(spec: CpuSpec) -> Layout:
    out = Layout()
    cores = spec.sockets * spec.cores_per_socket
    per_node = spec.cores_per_socket // spec.nodes_per_socket
    for thread in range(spec.threads_per_core):
        for core_global in range(cores):
            cpu = thread * cores + core_global
            socket, core = divmod(core_global, spec.cores_per_socket)
            out.socket[cpu], out.core[cpu], out.thread[cpu] = socket, core, thread
            out.node[cpu] = socket * spec.nodes_per_socket + min(core // per_node, spec.nodes_per_socket - 1)
    return out


def node_cpulist(spec: CpuSpec, node: int) -> str:
    return cpulist(layout(spec).cpus_of_node(node))


def node_cpumask(spec: CpuSpec, node: int) -> str:
    return cpumask(layout(spec).cpus_of_node(node), spec.logical)


def _cpuinfo_x86(spec: CpuSpec, where: Layout) -> str:
    vendor_id = "GenuineIntel" if spec.vendor == "intel" else "AuthenticAMD"
    flags = spec.flags or (INTEL_FLAGS if spec.vendor == "intel" else AMD_FLAGS)
    if spec.hypervisor and " hypervisor" not in flags:
        flags = flags.replace(" ss ", " ss ").replace("popcnt ", "popcnt ") + " hypervisor"
    siblings = spec.cores_per_socket * spec.threads_per_core
    blocks = []
    for cpu in range(spec.logical):
        apic = where.socket[cpu] * 256 + where.core[cpu] * spec.threads_per_core + where.thread[cpu]
        lines = [
            f"processor\t: {cpu}",
            f"vendor_id\t: {vendor_id}",
            f"cpu family\t: {spec.family}",
            f"model\t\t: {spec.model}",
            f"model name\t: {spec.model_name}",
            f"stepping\t: {spec.stepping}",
            f"microcode\t: {spec.microcode}",
            f"cpu MHz\t\t: {spec.base_mhz:.3f}",
            f"cache size\t: {spec.cache_kb} KB",
            f"physical id\t: {where.socket[cpu]}",
            f"siblings\t: {siblings}",
            f"core id\t\t: {where.core[cpu]}",
            f"cpu cores\t: {spec.cores_per_socket}",
            f"apicid\t\t: {apic}",
            f"initial apicid\t: {apic}",
            "fpu\t\t: yes",
            "fpu_exception\t: yes",
            f"cpuid level\t: {32 if spec.vendor == 'intel' else 16}",
            "wp\t\t: yes",
            f"flags\t\t: {flags}",
        ]
        if spec.vendor == "intel" and not spec.hypervisor:
            lines.append(
                "vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad "
                "ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest "
                "vapic_reg vid ple shadow_vmcs pml ept_mode_based_exec tsc_scaling usr_wait_pause "
                "notify_vm_exiting ipi_virt"
            )
        lines += [
            f"bugs\t\t: {spec.bugs}",
            f"bogomips\t: {spec.bogomips:.2f}",
        ]
        if spec.vendor == "amd":
            lines.append("TLB size\t: 3584 4K pages")
        lines += [
            "clflush size\t: 64",
            "cache_alignment\t: 64",
            f"address sizes\t: {spec.address_sizes}",
            "power management:"
            + (" ts ttp tm hwpstate cpb eff_freq_ro [13] [14]" if spec.vendor == "amd" and not spec.hypervisor else ""),
        ]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


def _cpuinfo_arm(spec: CpuSpec) -> str:
    blocks = []
    for cpu in range(spec.logical):
        blocks.append(
            f"processor\t: {cpu}\nBogoMIPS\t: {spec.bogomips:.2f}\nFeatures\t: {ARM_FEATURES}\nCPU implementer\t: 0x41\n"
            f"CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: {spec.arm_parts[cpu] if spec.arm_parts else '0xd4f'}\n"
            "CPU revision\t: 0\n"
        )
    return "\n".join(blocks) + "\n"


def _policy_files(spec: CpuSpec, cpu: int, kernel: tuple[int, int]) -> dict[str, str | bytes | int]:
    khz = lambda mhz: mhz * 1000  # noqa: E731
    driver = spec.freq_driver
    assert driver is not None
    governors = {
        "intel_pstate": "performance powersave",
        "amd-pstate-epp": "performance powersave",
    }.get(driver, "conservative ondemand userspace powersave performance schedutil")
    files: dict[str, str | bytes | int] = {
        "affected_cpus": cpu,
        "cpuinfo_max_freq": khz(spec.max_mhz),
        "cpuinfo_min_freq": khz(spec.min_mhz),
        "scaling_available_governors": governors,
        "scaling_cur_freq": khz(spec.max_mhz if spec.governor == "performance" else spec.base_mhz),
        "scaling_driver": driver,
        "scaling_governor": spec.governor,
        "scaling_max_freq": khz(spec.max_mhz),
        "scaling_min_freq": khz(spec.min_mhz),
    }
    if driver in ("intel_pstate", "amd-pstate-epp"):
        files["energy_performance_preference"] = spec.epp
        files["energy_performance_available_preferences"] = "default performance balance_performance balance_power power "
    if driver in ("intel_pstate", "intel_cpufreq"):
        files["base_frequency"] = khz(spec.base_mhz)
    if driver in ("amd-pstate", "amd-pstate-epp"):
        files["amd_pstate_highest_perf"] = 196 if kernel < (6, 9) else 255
        files["amd_pstate_max_freq"] = khz(spec.max_mhz)
    if driver == "acpi-cpufreq":
        steps = [spec.max_mhz if spec.boost else spec.base_mhz, spec.base_mhz, (spec.base_mhz + spec.min_mhz) // 2, spec.min_mhz]
        files["scaling_available_frequencies"] = " ".join(str(khz(s)) for s in dict.fromkeys(steps)) + " "
    return files


def write_cpus(tree: Tree, spec: CpuSpec, kernel: tuple[int, int], total_kib: int) -> Layout:
    where = layout(spec)
    n = spec.logical
    tree.file("/proc/cpuinfo", _cpuinfo_arm(spec) if spec.vendor == "arm" else _cpuinfo_x86(spec, where))
    every = cpulist(list(range(n)))
    tree.attrs(
        CPU,
        {
            "online": spec.online_cpus or every,
            "possible": every,
            "present": every,
            "offline": "",
            "kernel_max": 8191,
            "isolated": "",
            "modalias": "cpu:type:x86,ven0000fam0006mod008F:feature:,0000,0001\n"[:-1]
            if spec.vendor != "arm"
            else "cpu:type:aarch64:feature:,0000,0001",
        },
    )
    tree.attrs(
        f"{CPU}/smt",
        {"active": 1 if spec.threads_per_core > 1 else 0, "control": "on" if spec.threads_per_core > 1 else "notsupported"},
    )
    if spec.idle_driver is not None:
        tree.attrs(
            f"{CPU}/cpuidle",
            {
                "current_driver": spec.idle_driver,
                "current_governor": spec.idle_governor,
                "current_governor_ro": spec.idle_governor,
                "available_governors": "ladder menu teo" + (" haltpoll" if spec.idle_driver == "haltpoll" else ""),
            },
        )
    else:
        tree.attrs(f"{CPU}/cpuidle", {"current_driver": "none", "current_governor": "menu", "current_governor_ro": "menu"})
    if spec.freq_driver in ("intel_pstate", "intel_cpufreq"):
        tree.attrs(
            f"{CPU}/intel_pstate",
            {
                "status": "active" if spec.freq_driver == "intel_pstate" else "passive",
                "no_turbo": 0 if spec.boost else 1,
                "max_perf_pct": 100,
                "min_perf_pct": 100 if spec.governor == "performance" else 20,
                "num_pstates": (spec.max_mhz - spec.min_mhz) // 100 + 1,
                "turbo_pct": round(100 * (spec.max_mhz - spec.base_mhz) / (spec.max_mhz - spec.min_mhz)),
                "hwp_dynamic_boost": 0,
                "energy_efficiency": 0,
            },
        )
    if spec.freq_driver in ("amd-pstate", "amd-pstate-epp"):
        tree.attrs(f"{CPU}/amd_pstate", {"status": "active" if spec.freq_driver == "amd-pstate-epp" else "passive"})
        if kernel >= (6, 7):
            tree.attrs(f"{CPU}/amd_pstate", {"prefcore": "enabled"})
    has_boost_file = spec.freq_driver in ("acpi-cpufreq", "amd-pstate") or (
        spec.freq_driver == "amd-pstate-epp" and kernel >= (6, 11)
    )
    if spec.freq_driver is not None and spec.boost is not None and has_boost_file:
        tree.attrs(f"{CPU}/cpufreq", {"boost": 1 if spec.boost else 0})
    elif spec.freq_driver is not None:
        tree.directory(f"{CPU}/cpufreq")
    for cpu in range(n):
        base = f"{CPU}/cpu{cpu}"
        siblings = [c for c in range(n) if where.socket[c] == where.socket[cpu] and where.core[c] == where.core[cpu]]
        tree.attrs(
            f"{base}/topology",
            {
                "physical_package_id": where.socket[cpu],
                "core_id": where.core[cpu],
                "thread_siblings_list": cpulist(siblings),
            },
        )
        if cpu:
            tree.attrs(base, {"online": 1})
        tree.link(f"{base}/node{where.node[cpu]}", f"../../node/node{where.node[cpu]}")
        if spec.freq_driver is not None:
            tree.attrs(f"{CPU}/cpufreq/policy{cpu}", _policy_files(spec, cpu, kernel))
            tree.link(f"{base}/cpufreq", f"../cpufreq/policy{cpu}")
        if spec.idle_driver is not None:
            for k, state in enumerate(spec.idle_states):
                tree.attrs(
                    f"{base}/cpuidle/state{k}",
                    {
                        "name": state.name,
                        "desc": state.desc,
                        "latency": state.latency,
                        "residency": state.residency,
                        "disable": 1 if state.disabled else 0,
                    },
                )
        if spec.cppc:
            tree.attrs(
                f"{base}/acpi_cppc",
                {
                    "highest_perf": 196 if spec.vendor == "amd" else 1000,
                    "nominal_perf": 120 if spec.vendor == "amd" else 1000,
                    "lowest_nonlinear_perf": 60 if spec.vendor == "amd" else 400,
                    "lowest_perf": 18 if spec.vendor == "amd" else 100,
                    "nominal_freq": spec.base_mhz,
                },
            )
    _write_nodes(tree, spec, where, total_kib)
    return where


def _write_nodes(tree: Tree, spec: CpuSpec, where: Layout, total_kib: int) -> None:
    nodes = list(range(spec.nodes))
    extra = [node for node, _ in spec.extra_nodes]
    every = sorted([*nodes, *extra])
    mem = list(spec.memory_kib_per_node) or [total_kib // spec.nodes] * spec.nodes
    tree.attrs(
        NODE,
        {
            "online": cpulist(every),
            "possible": cpulist(every) if not extra else f"0-{max(every)}",
            "has_cpu": cpulist(nodes),
            "has_memory": cpulist(every),
            "has_normal_memory": cpulist(every),
        },
    )
    for node in every:
        base = f"{NODE}/node{node}"
        cpus = where.cpus_of_node(node) if node in nodes else []
        total = mem[node] if node in nodes else dict(spec.extra_nodes)[node]
        free = total * 83 // 100
        tree.attrs(base, {"cpulist": cpulist(cpus), "cpumap": cpumask(cpus, spec.logical)})
        tree.file(
            f"{base}/meminfo",
            "".join(
                f"Node {node} {key + ':':<17}{value:>9} kB\n"
                for key, value in (
                    ("MemTotal", total),
                    ("MemFree", free),
                    ("MemUsed", total - free),
                    ("Active", total // 20),
                    ("Inactive", total // 25),
                    ("FilePages", total // 12),
                    ("Mapped", total // 200),
                    ("AnonPages", total // 40),
                    ("Shmem", total // 500),
                    ("KernelStack", 40000),
                    ("PageTables", 30000),
                    ("Slab", total // 300),
                    ("HugePages_Total", 0),
                )
            ),
        )
        if spec.distances:
            row = spec.distances[every.index(node)]
        else:
            row = tuple(
                10 if other == node else (12 if other // spec.nodes_per_socket == node // spec.nodes_per_socket else 21)
                for other in every
            )
        tree.file(f"{base}/distance", " ".join(str(d) for d in row) + "\n")
        tree.file(
            f"{base}/numastat",
            (
                f"numa_hit {total * 4 // 3}\nnuma_miss 0\nnuma_foreign 0\n"
                f"interleave_hit 8123\nlocal_node {total * 4 // 3}\n"
                "other_node 1204\n"
            ),
        )
        for size in (2048, 1048576):
            tree.attrs(f"{base}/hugepages/hugepages-{size}kB", {"nr_hugepages": 0, "free_hugepages": 0, "surplus_hugepages": 0})
        for cpu in cpus:
            tree.link(f"{base}/cpu{cpu}", f"../../cpu/cpu{cpu}")
