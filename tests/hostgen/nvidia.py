"""The NVIDIA driver as a host shows it: NVML records, /proc/driver/nvidia, /sys/module/nvidia*, /dev/nvidia*,
the user-space libraries, the fabric manager, and what nvidia-smi prints."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.hostgen import vgpu
from tests.hostgen.catalog import MIB, GpuModel
from tests.hostgen.confcompute import write_conf_compute

if TYPE_CHECKING:
    from tests.hostgen.build import Built

P2P_CODES = {
    "OK": 0,
    "CHIPSET_NOT_SUPPORTED": 1,
    "GPU_NOT_SUPPORTED": 2,
    "IOH_TOPOLOGY_NOT_SUPPORTED": 3,
    "DISABLED_BY_REGKEY": 4,
    "NOT_SUPPORTED": 5,
    "UNKNOWN": 6,
}
"""nvmlGpuP2PStatus_t."""
P2P_LETTERS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
TOPO_INTERNAL, TOPO_SINGLE, TOPO_MULTIPLE, TOPO_HOSTBRIDGE, TOPO_NODE, TOPO_SYSTEM = 0, 10, 20, 30, 40, 50
TOPO_WORDS = {TOPO_SINGLE: "PIX", TOPO_MULTIPLE: "PXB", TOPO_HOSTBRIDGE: "PHB", TOPO_NODE: "NODE", TOPO_SYSTEM: "SYS"}
NO_INSTANCE = 0xFFFFFFFF
COMPUTE_MODE = {0: "Default", 2: "Prohibited", 3: "E. Process"}
"""nvidia-smi's words for nvmlComputeMode_t in its summary (which shortens Exclusive_Process to ``E. Process``)."""
COMPUTE_MODE_Q = {0: "Default", 2: "Prohibited", 3: "Exclusive_Process"}
"""The same in ``nvidia-smi -q``."""
MIG_PROFILE_IDS = {
    "1g.10gb": 19,
    "1g.18gb": 19,
    "1g.20gb": 15,
    "2g.20gb": 14,
    "2g.35gb": 14,
    "3g.40gb": 9,
    "3g.71gb": 9,
    "4g.40gb": 5,
    "7g.80gb": 0,
    "7g.141gb": 0,
}
RACK_CLUSTER_UUID = "5c1a3b2e-8d41-4f0a-9b7e-2a6f0c9d4e17"
RACK_CLIQUE = 32766
"""NVML fabric info of a multi-node NVLink rack's GPUs: the rack's cluster UUID and the NVLink partition (clique) the
switch trays put them in (nvidia-smi -q's Fabric section: State, Status, CliqueId, ClusterUUID). The values are
stand-ins: no public GB200 tray's own are read here."""
NVLINK_GBPS = {3: 25.0, 4: 26.562, 5: 53.125}
"""Per-link speed ``nvidia-smi nvlink -s`` prints; NVLink 5's is twice NVLink 4's (50 GB/s a link and direction
against 25), derived, not read off a B200's output."""


def uuid(host: str, kind: str, index: int) -> str:
    digest = hashlib.sha256(f"{host}/{kind}/{index}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass(frozen=True)
class GpuState:
    """One GPU as NVML reports it, derived from the host description."""

    index: int
    model: GpuModel
    bdf: str
    uuid: str
    serial: str
    minor: int
    used_mib: int
    mig: tuple[Any, ...] | None
    mig_pending: bool
    power_limit_mw: int
    ecc: bool
    temperature: int
    reasons: int
    nvlinks_down: frozenset[int]
    vbios: str
    link: tuple[int, int]
    """(current gen, current width)."""
    max_width: int
    remap_pending: bool
    processes: tuple[tuple[int, int, int, int], ...]
    """(pid, used bytes, gpu instance, compute instance)."""
    host_max_gen: int = 0
    """LnkCap generation of the port above the GPU, as the driver reads it through the OS (0: none above it). In a
    VM guest that is the hypervisor's emulated root port (QEMU's pcie-root-port says 16 GT/s by default)."""

    @property
    def max_gen(self) -> int:
        """nvmlDeviceGetMaxPcieLinkGeneration: the lower of the GPU's and its upstream port's capability."""
        return min(self.model.pcie_gen, self.host_max_gen) if self.host_max_gen else self.model.pcie_gen

    @property
    def busid(self) -> str:
        return f"0000{self.bdf.upper()}" if len(self.bdf) == 12 else self.bdf.upper()

    @property
    def total_bytes(self) -> int:
        return self.model.memory_mib * MIB

    @property
    def used_bytes(self) -> int:
        return self.used_mib * MIB


def _unsupported(tree: Any, fn: str, args: tuple[int, ...]) -> None:
    tree.call(fn, args, error="NOT_SUPPORTED")


def write_nvml(built: Built) -> None:
    tree, spec = built.tree, built.spec
    gpus: list[GpuState] = built.gpu_states
    if built.nvml_error is not None:
        tree.call("nvmlInit", (), error=built.nvml_error)
        tree.call("nvmlInitWithFlags", (0,), error=built.nvml_error)
        for fn in (
            "nvmlSystemGetDriverVersion",
            "nvmlSystemGetCudaDriverVersion",
            "nvmlSystemGetCudaDriverVersion_v2",
            "nvmlDeviceGetCount",
        ):
            tree.call(fn, (), error="UNINITIALIZED")
        return
    tree.call("nvmlInit", (), None)
    tree.call("nvmlSystemGetDriverVersion", (), spec.driver.version)
    tree.call("nvmlSystemGetNVMLVersion", (), f"12.{spec.driver.version}")
    tree.call("nvmlSystemGetCudaDriverVersion", (), spec.driver.cuda)
    tree.call("nvmlSystemGetCudaDriverVersion_v2", (), spec.driver.cuda)
    tree.call("nvmlDeviceGetCount", (), len(gpus))
    write_conf_compute(built)
    for g in gpus:
        _device(built, g)
        if spec.gpus.vgpu is not None:
            vgpu.write_nvml(built, g, spec.gpus.vgpu)
    for a in gpus:
        for b in gpus:
            if a.index == b.index:
                continue
            level = built.topology_level(a.index, b.index)
            tree.call("nvmlDeviceGetTopologyCommonAncestor", (a.index, b.index), level)
            tree.call("nvmlDeviceOnSameBoard", (a.index, b.index), 0)
            status = built.p2p_status(a, b)
            nvlink = built.nvlink_between(a, b)
            tree.call("nvmlDeviceGetP2PStatus", (a.index, b.index, 0), status)
            tree.call("nvmlDeviceGetP2PStatus", (a.index, b.index, 1), status)
            tree.call(
                "nvmlDeviceGetP2PStatus", (a.index, b.index, 2), 0 if nvlink and status == 0 else P2P_CODES["NOT_SUPPORTED"]
            )
            tree.call(
                "nvmlDeviceGetP2PStatus", (a.index, b.index, 3), 0 if nvlink and status == 0 else P2P_CODES["NOT_SUPPORTED"]
            )
            tree.call("nvmlDeviceGetP2PStatus", (a.index, b.index, 4), status if not nvlink or status else 0)


def _device(built: Built, g: GpuState) -> None:
    tree, spec = built.tree, built.spec
    m, i = g.model, g.index
    c = tree.call
    c("nvmlDeviceGetHandleByIndex", (i,), i)
    c("nvmlDeviceGetName", (i,), m.name)
    c("nvmlDeviceGetUUID", (i,), f"GPU-{g.uuid}")
    c("nvmlDeviceGetMinorNumber", (i,), g.minor)
    c("nvmlDeviceGetIndex", (i,), i)
    c("nvmlDeviceGetBrand", (i,), 5 if m.product_brand == "GeForce" else 2 if m.hbm else 12)
    if m.product_brand == "GeForce":
        _unsupported(tree, "nvmlDeviceGetSerial", (i,))
    else:
        c("nvmlDeviceGetSerial", (i,), g.serial)
    c("nvmlDeviceGetBoardPartNumber", (i,), m.board_part or "N/A")
    c("nvmlDeviceGetArchitecture", (i,), m.arch)
    c("nvmlDeviceGetCudaComputeCapability", (i,), list(m.compute_capability))
    c("nvmlDeviceGetVbiosVersion", (i,), g.vbios)
    c("nvmlDeviceGetInforomImageVersion", (i,), "G520.0200.00.05" if m.hbm else "N/A")
    bus = int(g.bdf.split(":")[1], 16)
    dev = int(g.bdf.split(":")[2].split(".")[0], 16)
    domain = int(g.bdf.split(":")[0], 16)
    c(
        "nvmlDeviceGetPciInfo",
        (i,),
        {
            "busIdLegacy": g.bdf.upper()[:12] if domain < 0x10000 else g.bdf.upper(),
            "domain": domain,
            "bus": bus,
            "device": dev,
            "pciDeviceId": (m.device_id << 16) | 0x10DE,
            "pciSubSystemId": (m.subsystem[1] << 16) | m.subsystem[0],
            "busId": f"{domain:08X}:{bus:02X}:{dev:02X}.0",
        },
    )
    c("nvmlDeviceGetCurrPcieLinkGeneration", (i,), g.link[0])
    c("nvmlDeviceGetCurrPcieLinkWidth", (i,), g.link[1])
    c("nvmlDeviceGetMaxPcieLinkGeneration", (i,), g.max_gen)
    c("nvmlDeviceGetGpuMaxPcieLinkGeneration", (i,), m.pcie_gen)
    c("nvmlDeviceGetMaxPcieLinkWidth", (i,), g.max_width)
    c("nvmlDeviceGetPcieReplayCounter", (i,), 0)
    c("nvmlDeviceGetPcieThroughput", (i, 0), 1120)
    c("nvmlDeviceGetPcieThroughput", (i, 1), 980)
    c("nvmlDeviceGetPcieLinkMaxSpeed", (i,), {5: 32000, 4: 16000, 3: 8000}[m.pcie_gen])
    _memory(built, g)
    c("nvmlDeviceGetComputeMode", (i,), spec.gpus.compute_mode)
    c("nvmlDeviceGetPersistenceMode", (i,), 1 if spec.driver.persistence else 0)
    c("nvmlDeviceGetDisplayMode", (i,), 0)
    c("nvmlDeviceGetDisplayActive", (i,), 0)
    c("nvmlDeviceGetVirtualizationMode", (i,), 1 if built.guest else 0)
    if m.mig:
        current = 1 if g.mig is not None else 0
        pending = 1 - current if g.mig_pending else current
        c("nvmlDeviceGetMigMode", (i,), [current, pending])
        if current:
            c("nvmlDeviceGetMaxMigDeviceCount", (i,), 7)
            for j in range(7):
                if j < len(g.mig):
                    inst = g.mig[j]
                    mem = next(mib for name, mib, _ in m.mig_profiles if name == inst.profile) * MIB
                    used = sum(p[1] for p in g.processes if p[2] == inst.gi)
                    c(
                        "nvmlDeviceGetMigDeviceHandleByIndex",
                        (i, j),
                        {
                            "uuid": f"MIG-{uuid(built.spec.hostname, f'mig{i}', j)}",
                            "name": f"{m.name} MIG {inst.profile}",
                            "gpuInstanceId": inst.gi,
                            "computeInstanceId": inst.ci,
                            "memory": {"total": mem, "free": mem - used, "used": used},
                        },
                    )
                else:
                    tree.call("nvmlDeviceGetMigDeviceHandleByIndex", (i, j), error="NOT_FOUND")
        else:
            c("nvmlDeviceGetMaxMigDeviceCount", (i,), 0)
    else:
        _unsupported(tree, "nvmlDeviceGetMigMode", (i,))
        _unsupported(tree, "nvmlDeviceGetMaxMigDeviceCount", (i,))
    procs = [{"pid": p[0], "usedGpuMemory": p[1], "gpuInstanceId": p[2], "computeInstanceId": p[3]} for p in g.processes]
    c("nvmlDeviceGetComputeRunningProcesses", (i,), procs)
    c("nvmlDeviceGetGraphicsRunningProcesses", (i,), [])
    c("nvmlDeviceGetMPSComputeRunningProcesses", (i,), [p for p in procs if p["pid"] in built.mps_clients])
    busy = bool(g.processes)
    if m.ecc and g.ecc:
        c("nvmlDeviceGetEccMode", (i,), [1, 1])
    elif m.ecc:
        c("nvmlDeviceGetEccMode", (i,), [0, 0])
    else:
        _unsupported(tree, "nvmlDeviceGetEccMode", (i,))
    for err in (0, 1):
        for counter in (0, 1):
            if m.ecc and g.ecc:
                c("nvmlDeviceGetTotalEccErrors", (i, err, counter), 0)
            else:
                _unsupported(tree, "nvmlDeviceGetTotalEccErrors", (i, err, counter))
    if m.hbm:
        c("nvmlDeviceGetRemappedRows", (i,), [0, 1 if g.remap_pending else 0, 1 if g.remap_pending else 0, 0])
        c(
            "nvmlDeviceGetRowRemapperHistogram",
            (i,),
            {"max": 2560 if m.arch >= 9 else 640, "high": 0, "partial": 0, "low": 0, "none": 0},
        )
        for cause in (0, 1):
            _unsupported(tree, "nvmlDeviceGetRetiredPages", (i, cause))
        _unsupported(tree, "nvmlDeviceGetRetiredPagesPendingStatus", (i,))
    elif m.ecc:
        _unsupported(tree, "nvmlDeviceGetRemappedRows", (i,))
        _unsupported(tree, "nvmlDeviceGetRowRemapperHistogram", (i,))
        for cause in (0, 1):
            c("nvmlDeviceGetRetiredPages", (i, cause), [])
        c("nvmlDeviceGetRetiredPagesPendingStatus", (i,), 0)
    else:
        for fn in ("nvmlDeviceGetRemappedRows", "nvmlDeviceGetRowRemapperHistogram", "nvmlDeviceGetRetiredPagesPendingStatus"):
            _unsupported(tree, fn, (i,))
        for cause in (0, 1):
            _unsupported(tree, "nvmlDeviceGetRetiredPages", (i, cause))
    c("nvmlDeviceGetTemperature", (i, 0), g.temperature)
    c("nvmlDeviceGetTemperatureThreshold", (i, 0), m.shutdown_c)
    c("nvmlDeviceGetTemperatureThreshold", (i, 1), m.slowdown_c)
    if m.mem_max_c is not None:
        c("nvmlDeviceGetTemperatureThreshold", (i, 2), m.mem_max_c)
    else:
        _unsupported(tree, "nvmlDeviceGetTemperatureThreshold", (i, 2))
    c("nvmlDeviceGetTemperatureThreshold", (i, 3), m.gpu_max_c)
    if m.product_brand == "GeForce":
        c("nvmlDeviceGetFanSpeed", (i,), 30)
        c("nvmlDeviceGetNumFans", (i,), 3)
    else:
        _unsupported(tree, "nvmlDeviceGetFanSpeed", (i,))
        c("nvmlDeviceGetNumFans", (i,), 0)
    watts = m.idle_watts + (m.power_default_mw // 1000 - m.idle_watts) // 6 * busy
    c("nvmlDeviceGetPowerUsage", (i,), watts * 1000 + 417)
    c("nvmlDeviceGetTotalEnergyConsumption", (i,), 81234567890 + 1000003 * i)
    if m.unified_memory:
        for fn in (
            "nvmlDeviceGetPowerManagementDefaultLimit",
            "nvmlDeviceGetPowerManagementLimit",
            "nvmlDeviceGetEnforcedPowerLimit",
            "nvmlDeviceGetPowerManagementLimitConstraints",
        ):
            _unsupported(tree, fn, (i,))
    else:
        c("nvmlDeviceGetPowerManagementDefaultLimit", (i,), m.power_default_mw)
        c("nvmlDeviceGetPowerManagementLimit", (i,), g.power_limit_mw)
        c("nvmlDeviceGetEnforcedPowerLimit", (i,), g.power_limit_mw)
        c(
            "nvmlDeviceGetPowerManagementLimitConstraints",
            (i,),
            [m.power_default_mw // 7 * 3 if m.hbm else m.power_default_mw // 3, m.power_max_mw],
        )
    c("nvmlDeviceGetPerformanceState", (i,), 0)
    c("nvmlDeviceGetUtilizationRates", (i,), {"gpu": 37 if busy else 0, "memory": 21 if busy else 0})
    c("nvmlDeviceGetEncoderUtilization", (i,), [0, 167000])
    c("nvmlDeviceGetDecoderUtilization", (i,), [0, 167000])
    c("nvmlDeviceGetCurrentClocksEventReasons", (i,), g.reasons)
    c("nvmlDeviceGetCurrentClocksThrottleReasons", (i,), g.reasons)
    c("nvmlDeviceGetSupportedClocksEventReasons", (i,), 0x1FF)
    graphics, sm, memory = m.clocks_max
    idle = g.reasons & 0x1 and not busy
    current = (345 if idle else graphics, 345 if idle else sm, memory, 765 if idle else 1755)
    for clock, value in enumerate(current):
        c("nvmlDeviceGetClockInfo", (i, clock), value)
    for clock, value in enumerate((graphics, sm, memory, 1755)):
        c("nvmlDeviceGetMaxClockInfo", (i, clock), value)
        c("nvmlDeviceGetMaxCustomerBoostClock", (i, clock), value if clock < 3 else 1755)
    for clock in (0, 2):
        value = (graphics, sm, memory)[clock]
        if m.product_brand == "GeForce":
            _unsupported(tree, "nvmlDeviceGetApplicationsClock", (i, clock))
            _unsupported(tree, "nvmlDeviceGetDefaultApplicationsClock", (i, clock))
        else:
            c("nvmlDeviceGetApplicationsClock", (i, clock), value)
            c("nvmlDeviceGetDefaultApplicationsClock", (i, clock), value)
    for clock in (0, 1, 2, 3):
        for ident in (0, 1, 2, 3):
            value = current[clock] if ident == 0 else (graphics, sm, memory, 1755)[clock]
            c("nvmlDeviceGetClock", (i, clock, ident), value)
    c("nvmlDeviceGetAutoBoostedClocksEnabled", (i,), error="NOT_SUPPORTED")
    _fabric(built, g)
    _nvlinks(built, g)


def _memory(built: Built, g: GpuState) -> None:
    """Framebuffer and BAR1 (a unified-memory SoC GPU answers neither)."""
    tree, i = built.tree, g.index
    if g.model.unified_memory:
        for fn in ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetBAR1MemoryInfo"):
            _unsupported(tree, fn, (i,))
        return
    tree.call(
        "nvmlDeviceGetMemoryInfo", (i,), {"total": g.total_bytes, "free": g.total_bytes - g.used_bytes, "used": g.used_bytes}
    )
    bar1_total = built.bar1_bytes(g)
    bar1_used = 1703936 + (g.used_bytes // 4096 if g.used_mib > 16 else 0) % (bar1_total // 2)
    tree.call(
        "nvmlDeviceGetBAR1MemoryInfo", (i,), {"bar1Total": bar1_total, "bar1Free": bar1_total - bar1_used, "bar1Used": bar1_used}
    )


def _fabric(built: Built, g: GpuState) -> None:
    tree = built.tree
    if built.guest and built.spec.gpus.nvswitches == 0:
        tree.call("nvmlDeviceGetGpuFabricInfo", (g.index,), error="INVALID_ARGUMENT" if g.model.arch >= 9 else "NOT_SUPPORTED")
    elif built.rack_tray:
        state, status = (3, 0) if built.fabric_ready else (1, 26)
        fabric = {"clusterUuid": RACK_CLUSTER_UUID, "status": status, "cliqueId": RACK_CLIQUE, "state": state}
        tree.call("nvmlDeviceGetGpuFabricInfo", (g.index,), fabric)
    elif g.model.arch >= 9 and built.spec.gpus.nvswitches:
        state = 3 if built.fabric_ready else 1
        status = 0 if built.fabric_ready else 26  # NVML_ERROR_... (in progress / not started)
        tree.call(
            "nvmlDeviceGetGpuFabricInfo",
            (g.index,),
            {"clusterUuid": "00000000-0000-0000-0000-000000000000", "status": status, "cliqueId": 0, "state": state},
        )
    else:
        tree.call("nvmlDeviceGetGpuFabricInfo", (g.index,), error="NOT_SUPPORTED")


def _nvlinks(built: Built, g: GpuState) -> None:
    tree = built.tree
    m, i = g.model, g.index
    connected = built.nvlink_trained
    for link in range(18):
        if m.nvlinks == 0:
            tree.call("nvmlDeviceGetNvLinkState", (i, link), error="NOT_SUPPORTED")
            continue
        if link >= m.nvlinks:
            tree.call("nvmlDeviceGetNvLinkState", (i, link), error="INVALID_ARGUMENT")
            continue
        peer = built.bridge_peer(g) if built.spec.gpus.nvlink_bridges else None
        up = connected and link not in g.nvlinks_down and (peer is not None or not built.spec.gpus.nvlink_bridges)
        tree.call("nvmlDeviceGetNvLinkState", (i, link), 1 if up else 0)
        tree.call("nvmlDeviceGetNvLinkVersion", (i, link), m.nvlink_version)
        if connected and peer is not None:
            tree.call("nvmlDeviceGetNvLinkRemoteDeviceType", (i, link), 0)  # NVML_NVLINK_DEVICE_TYPE_GPU
            tree.call(
                "nvmlDeviceGetNvLinkRemotePciInfo",
                (i, link),
                {"busId": peer.busid, "domain": 0, "bus": int(peer.bdf.split(":")[1], 16), "device": 0},
            )
        elif connected:
            tree.call("nvmlDeviceGetNvLinkRemoteDeviceType", (i, link), 2)
            switch = built.nvswitch_bdfs[link % len(built.nvswitch_bdfs)] if built.nvswitch_bdfs else g.bdf
            tree.call(
                "nvmlDeviceGetNvLinkRemotePciInfo",
                (i, link),
                {"busId": f"0000{switch.upper()}", "domain": 0, "bus": int(switch.split(":")[1], 16), "device": 0},
            )
        for counter in range(5):
            if not up:
                tree.call("nvmlDeviceGetNvLinkErrorCounter", (i, link, counter), 0)
                continue
            value = (7 * i + 3 * link) % 48 if counter == 3 and m.arch >= 9 else 0
            tree.call("nvmlDeviceGetNvLinkErrorCounter", (i, link, counter), value)


# -- files ----------------------------------------------------------------------------------


def proc_version_text(version: str, open_module: bool, arch: str) -> str:
    if open_module:
        head = (
            f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {version}  Release "
            "Build  (dvs-builder@U16-I3-B03-4-3)  Tue Oct  8 03:04:50 UTC 2024"
        )
    else:
        head = f"NVRM version: NVIDIA UNIX {arch} Kernel Module  {version}  Tue Oct  8 03:22:07 UTC 2024"
    return f"{head}\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n"


def information(g: GpuState, irq: int, firmware: str | None, name: str | None = None) -> str:
    lines = [
        f"Model: \t\t {name or g.model.name}",
        f"IRQ:   \t\t {irq}",
        f"GPU UUID: \t GPU-{g.uuid}",
        f"Video BIOS: \t {g.vbios.lower()}",
        "Bus Type: \t PCIe",
        "DMA Size: \t 52 bits" if g.model.arch >= 8 else "DMA Size: \t 47 bits",
        "DMA Mask: \t 0xfffffffffffff" if g.model.arch >= 8 else "DMA Mask: \t 0x7fffffffffff",
        f"Bus Location: \t {g.bdf}",
        f"Device Minor: \t {g.minor}",
    ]
    if firmware:
        lines.append(f"GPU Firmware: \t {firmware}")
    lines.append("GPU Excluded:\t No")
    return "\n".join(lines) + "\n"


def topo_matrix(built: Built) -> str:
    gpus = built.gpu_states
    nics = built.rdma_names
    names = [f"GPU{g.index}" for g in gpus] + [f"NIC{k}" for k in range(len(nics))]
    header = "\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    rows = []
    for g in gpus:
        cells = []
        for other in gpus:
            if other.index == g.index:
                cells.append(" X ")
            elif built.nvlink_between(g, other):
                cells.append(f"NV{g.model.nvlinks - len(g.nvlinks_down)}")
            else:
                cells.append(TOPO_WORDS[built.topology_level(g.index, other.index)])
        cells += [TOPO_WORDS[built.topology_level_bdf(g.bdf, nic_bdf)] for nic_bdf in built.rdma_bdfs]
        node = built.numa_of(g.bdf)
        affinity = built.cpulist_of(g.bdf) if node >= 0 else built.all_cpus
        rows.append(f"GPU{g.index}\t" + "\t".join(cells) + f"\t{affinity}\t{node if node >= 0 else 'N/A'}\t\tN/A\n")
    for k, nic_bdf in enumerate(built.rdma_bdfs):
        cells = [TOPO_WORDS[built.topology_level_bdf(nic_bdf, g.bdf)] for g in gpus]
        cells += [
            " X " if other == nic_bdf else TOPO_WORDS[built.topology_level_bdf(nic_bdf, other)] for other in built.rdma_bdfs
        ]
        rows.append(f"NIC{k}\t" + "\t".join(cells) + "\n")
    legend = (
        "\nLegend:\n\n  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    )
    if nics:
        legend += "\nNIC Legend:\n\n" + "".join(f"  NIC{k}: {name}\n" for k, name in enumerate(nics))
    return header + "".join(rows) + legend


def nvlink_status(built: Built) -> str:
    out = []
    for g in built.gpu_states:
        out.append(f"GPU {g.index}: {g.model.name} (UUID: GPU-{g.uuid})\n")
        if g.model.nvlinks == 0:
            continue
        bridged = not built.spec.gpus.nvlink_bridges or built.bridge_peer(g) is not None
        for link in range(g.model.nvlinks):
            up = built.nvlink_trained and bridged and link not in g.nvlinks_down
            out.append(
                f"\t Link {link}: {NVLINK_GBPS[g.model.nvlink_version]:.3f} GB/s\n" if up else f"\t Link {link}: <inactive>\n"
            )
    return "".join(out)


def smi_list(built: Built) -> str:
    out = []
    for g in built.gpu_states:
        out.append(f"GPU {g.index}: {g.model.name} (UUID: GPU-{g.uuid})\n")
        for j, inst in enumerate(g.mig or ()):
            out.append(f"  MIG {inst.profile:<12} Device {j:>2}: (UUID: MIG-{uuid(built.spec.hostname, f'mig{g.index}', j)})\n")
    return "".join(out)


def smi_mig_lgi(built: Built) -> str:
    rows = []
    for g in built.gpu_states:
        start = 0
        for inst in g.mig or ():
            slices = next(s for name, _, s in g.model.mig_profiles if name == inst.profile)
            size = 4 if slices in (3, 4) else 8 if slices == 7 else slices
            rows.append(
                f"|  {g.index:>2}  MIG {inst.profile:<12} {MIG_PROFILE_IDS.get(inst.profile, 0):>5} "
                f" {inst.gi:>8}  {start:>8}:{size:<4}|"
            )
            start += size
    if not rows:
        return "No GPU instances found: Not Found\n"
    top = "+-------------------------------------------------------+"
    return (
        "\n".join(
            [
                top,
                "| GPU instances:                                        |",
                "| GPU   Name             Profile  Instance   Placement  |",
                "|                          ID       ID       Start:Size |",
                "|=======================================================|",
                *rows,
                top,
            ]
        )
        + "\n"
    )


def smi_summary(built: Built) -> str:
    d = built.spec.driver
    cuda = f"{d.cuda // 1000}.{d.cuda % 1000 // 10}"
    line = "+-----------------------------------------------------------------------------------------+"
    out = [
        "Sat Nov 30 10:00:00 2026       ",
        line,
        f"| NVIDIA-SMI {d.version:<22} Driver Version: {d.version:<14} CUDA Version: {cuda:<8} |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in built.gpu_states:
        pm = "On" if d.persistence else "Off"
        ecc = "0" if g.ecc and g.model.ecc else "N/A" if not g.model.ecc else "Off"
        fan = "30%" if g.model.product_brand == "GeForce" else "N/A"
        name = g.model.name[:29]
        bus = f"{int(g.bdf.split(':')[0], 16):08X}:{g.bdf.split(':', 1)[1].upper()}"
        watts = g.model.idle_watts
        unified = g.model.unified_memory
        cap = "N/A" if unified else f"{g.power_limit_mw // 1000:>4}W"
        memory = "Not Supported" if unified else f"{g.used_mib:>9}MiB / {g.model.memory_mib:>6}MiB"
        out += [
            f"| {g.index:>3}  {name:<29} {pm:>4}  | {bus:>16} Off | {ecc:>20} |",
            (
                f"| {fan:>3}  {g.temperature:>3}C    P0 {watts:>17}W / {cap:>5} "
                f"| {memory:>24} | {'0%':>9} {COMPUTE_MODE[built.spec.gpus.compute_mode]:>12} "
                "|"
            ),
            f"| {'':<39} | {'':<22} | {('Enabled' if g.mig is not None else 'Disabled') if g.model.mig else 'N/A':>20} |",
            "+-----------------------------------------+------------------------+----------------------+",
        ]
    out += [
        "",
        line,
        "| Processes:                                                                              |",
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    listed = False
    for g in built.gpu_states:
        for pid, used, gi, ci in g.processes:
            listed = True
            name = built.process_name(pid)
            gi_text = "N/A" if gi == NO_INSTANCE else str(gi)
            ci_text = "N/A" if ci == NO_INSTANCE else str(ci)
            kind = "M+C" if pid in built.mps_clients else "C"
            out.append(f"|  {g.index:>3}  {gi_text:>4} {ci_text:>4} {pid:>10}    {kind:>3}   {name:<40} {used // MIB:>6}MiB |")
    if not listed:
        out.append("|  No running processes found                                                             |")
    out.append(line)
    return "\n".join(out) + "\n"


def _memory_section(built: Built, g: GpuState) -> list[str]:
    """``nvidia-smi -q``'s FB and BAR1 usage: N/A where NVML answers NOT_SUPPORTED (a unified-memory SoC GPU), as
    nvidia-smi prints every field it cannot query (the exact lines of a DGX Spark's ``-q`` are not in a public source
    read here; its table's "Not Supported" is)."""
    m = g.model
    if m.unified_memory:
        fields = {"FB": ("Total", "Reserved", "Used", "Free"), "BAR1": ("Total", "Used", "Free")}
        return [
            line
            for part, names in fields.items()
            for line in (f"    {part} Memory Usage", *(f"        {n:<34}: N/A" for n in names))
        ]
    return [
        "    FB Memory Usage",
        f"        Total                             : {m.memory_mib} MiB",
        f"        Reserved                          : {552 if m.hbm else 354} MiB",
        f"        Used                              : {g.used_mib} MiB",
        f"        Free                              : {m.memory_mib - g.used_mib} MiB",
        "    BAR1 Memory Usage",
        f"        Total                             : {built.bar1_bytes(g) // MIB} MiB",
        "        Used                              : 1 MiB",
        f"        Free                              : {built.bar1_bytes(g) // MIB - 1} MiB",
    ]


def smi_query(built: Built) -> str:
    d = built.spec.driver
    cuda = f"{d.cuda // 1000}.{d.cuda % 1000 // 10}"
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        "Timestamp                                 : Sat Nov 30 10:00:00 2026",
        f"Driver Version                            : {d.version}",
        f"CUDA Version                              : {cuda}",
        "",
        f"Attached GPUs                             : {len(built.gpu_states)}",
    ]
    for g in built.gpu_states:
        m = g.model
        bus = f"{int(g.bdf.split(':')[0], 16):08X}:{g.bdf.split(':', 1)[1].upper()}"
        mig = ("Enabled" if g.mig is not None else "Disabled") if m.mig else "N/A"
        fabric = "N/A"
        if built.rack_tray or (m.arch >= 9 and built.spec.gpus.nvswitches):
            fabric = "Completed" if built.fabric_ready else "Not Started"
        clique, cluster = (str(RACK_CLIQUE), RACK_CLUSTER_UUID) if built.rack_tray else ("N/A", "N/A")
        profile = built.spec.gpus.vgpu
        na = profile is not None
        no_cap = na or m.unified_memory
        out += [
            f"GPU {bus}",
            f"    Product Name                          : {vgpu.name(m, profile) if profile else m.name}",
            f"    Product Brand                         : {vgpu.PRODUCT if profile else m.product_brand}",
            f"    Product Architecture                  : {m.arch_name}",
            "    Display Mode                          : Disabled",
            "    Display Active                        : Disabled",
            f"    Persistence Mode                      : {'Enabled' if d.persistence else 'Disabled'}",
            "    Addressing Mode                       : None",
            "    MIG Mode",
            f"        Current                           : {mig}",
            f"        Pending                           : {mig}",
            "    Accounting Mode                       : Disabled",
            f"    Serial Number                         : {g.serial if m.product_brand != 'GeForce' else 'N/A'}",
            f"    GPU UUID                              : GPU-{g.uuid}",
            f"    Minor Number                          : {g.minor}",
            f"    VBIOS Version                         : {g.vbios}",
            "    MultiGPU Board                        : No",
            f"    Board Part Number                     : {m.board_part or 'N/A'}",
            "    GPU Virtualization Mode",
            f"        Virtualization Mode               : {'VGPU' if na else 'Pass-Through' if built.guest else 'None'}",
            "        Host VGPU Mode                    : N/A",
            "    Fabric",
            f"        State                             : {fabric}",
            f"        Status                            : {'Success' if fabric == 'Completed' else 'N/A'}",
            f"        CliqueId                          : {clique}",
            f"        ClusterUUID                       : {cluster}",
            "    PCI",
            f"        Bus                               : 0x{g.bdf.split(':')[1].upper()}",
            f"        Device                            : 0x{g.bdf.split(':')[2][:2].upper()}",
            f"        Domain                            : 0x{g.bdf.split(':')[0].upper()}",
            f"        Device Id                         : 0x{m.device_id:04X}10DE",
            f"        Bus Id                            : {bus}",
            f"        Sub System Id                     : 0x{m.subsystem[1]:04X}{m.subsystem[0]:04X}",
            "        GPU Link Info",
            "            PCIe Generation",
            f"                Max                       : {'N/A' if na else g.max_gen}",
            f"                Current                   : {'N/A' if na else g.link[0]}",
            f"                Device Current            : {'N/A' if na else g.link[0]}",
            f"                Device Max                : {'N/A' if na else m.pcie_gen}",
            f"                Host Max                  : {'N/A' if na else g.host_max_gen or 'N/A'}",
            "            Link Width",
            f"                Max                       : {'N/A' if na else f'{g.max_width}x'}",
            f"                Current                   : {'N/A' if na else f'{g.link[1]}x'}",
            "        Replays Since Reset               : 0",
            "        Replay Number Rollovers           : 0",
            f"    Fan Speed                             : {'30 %' if m.product_brand == 'GeForce' else 'N/A'}",
            "    Performance State                     : P0",
            "    Clocks Event Reasons",
            f"        Idle                              : {'Active' if g.reasons & 0x1 else 'Not Active'}",
            f"        SW Power Cap                      : {'Active' if g.reasons & 0x4 else 'Not Active'}",
            f"        HW Slowdown                       : {'Active' if g.reasons & 0x8 else 'Not Active'}",
            f"        SW Thermal Slowdown               : {'Active' if g.reasons & 0x20 else 'Not Active'}",
            *_memory_section(built, g),
            f"    Compute Mode                          : {COMPUTE_MODE_Q[built.spec.gpus.compute_mode]}",
            "    ECC Mode",
            f"        Current                           : {('Enabled' if g.ecc else 'Disabled') if m.ecc else 'N/A'}",
            f"        Pending                           : {('Enabled' if g.ecc else 'Disabled') if m.ecc else 'N/A'}",
            "    Temperature",
            f"        GPU Current Temp                  : {'N/A' if na else f'{g.temperature} C'}",
            f"        GPU Shutdown Temp                 : {'N/A' if na else f'{m.shutdown_c} C'}",
            f"        GPU Slowdown Temp                 : {'N/A' if na else f'{m.slowdown_c} C'}",
            f"        GPU Max Operating Temp            : {'N/A' if na else f'{m.gpu_max_c} C'}",
            "    GPU Power Readings",
            f"        Power Draw                        : {'N/A' if na else f'{m.idle_watts}.42 W'}",
            f"        Current Power Limit               : {'N/A' if no_cap else f'{g.power_limit_mw / 1000:.2f} W'}",
            f"        Default Power Limit               : {'N/A' if no_cap else f'{m.power_default_mw / 1000:.2f} W'}",
            f"        Max Power Limit                   : {'N/A' if no_cap else f'{m.power_max_mw / 1000:.2f} W'}",
            "    Max Clocks",
            f"        Graphics                          : {m.clocks_max[0]} MHz",
            f"        SM                                : {m.clocks_max[1]} MHz",
            f"        Memory                            : {m.clocks_max[2]} MHz",
            "    Processes",
        ]
        if na:
            at = out.index("    Processes", len(out) - 1)
            out[at:at] = vgpu.smi_section(built)
        if not g.processes:
            out.append("        None")
        for pid, used, gi, ci in g.processes:
            out += [
                f"        GPU instance ID                   : {'N/A' if gi == NO_INSTANCE else gi}",
                f"        Compute instance ID               : {'N/A' if ci == NO_INSTANCE else ci}",
                f"        Process ID                        : {pid}",
                f"            Type                          : {'M+C' if pid in built.mps_clients else 'C'}",
                f"            Name                          : {built.process_name(pid)}",
                f"            Used GPU Memory               : {used // MIB} MiB",
            ]
        out.append("")
    return "\n".join(out) + "\n"
