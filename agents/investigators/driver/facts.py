"""driver facts: the kernel module and NVML versions, loaded modules, device nodes, RDMA NICs, NVSwitches and the
driver services; plus the helpers the driver rules share.
"""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cdi import CdiUse, read_cdi
from rigaudit.agents.facts.cdi_spec import HostCdi, read_host_cdi
from rigaudit.agents.facts.confcompute import ConfCompute, read_conf_compute
from rigaudit.agents.facts.driver_origin import PASSTHROUGH_SOURCE
from rigaudit.agents.facts.driver_support import BLACKWELL
from rigaudit.agents.facts.gpus import NVIDIA_VENDOR, PCI_DEVICES, Gpu, GpuInventory, collect_gpus
from rigaudit.agents.facts.nvidia_driver import MODULES, PROC_VERSION
from rigaudit.agents.facts.nvlink_management import rdma_devices
from rigaudit.agents.facts.nvlsm import Nvlsm, collect_nvlsm
from rigaudit.agents.facts.persistenced_unit import PersistencedUnit, collect_persistenced_unit
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.rdma import RdmaFacts, collect_rdma
from rigaudit.agents.facts.unit_reasons import UnitLog, read_unit
from rigaudit.agents.facts.vgpu import VgpuLicense, collect_licenses
from rigaudit.agents.investigators.driver.fabric import FM_LOG, FabricVersion, collect_fabric_version
from rigaudit.agents.investigators.driver.imex_facts import ImexFacts, collect_imex
from rigaudit.agents.investigators.driver.install_facts import InstallFacts, collect_install
from rigaudit.agents.investigators.driver.internode import Internode, collect_internode
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref, nvml_ref
from rigaudit.tools.schema.finding import Area, Finding, Where

AREA: Area = "driver"
MODULE_VERSION = "/sys/module/nvidia/version"
INFINIBAND = "/sys/class/infiniband"
PERSISTENCED = ("systemctl", "is-active", "nvidia-persistenced")
FABRICMANAGER = ("systemctl", "is-active", "nvidia-fabricmanager")


class Service(Record):
    state: str | None
    """``active``, ``inactive``, ``failed``... or ``None`` when the command gave no answer."""
    error: str | None
    ref: str


class DriverFacts(Record):
    platform: Platform
    gpus: tuple[Gpu, ...]
    nvml_init: bool
    nvml_ok: bool
    nvml_error: str | None
    nvml_version: str | None
    proc_version: str | None
    module_version: str | None
    archs: dict[int, int | None]
    persistence: dict[int, int | None]
    persistenced: Service
    modules: frozenset[str] | None
    modules_error: str | None
    proc_devices: str | None
    dev: tuple[str, ...] | None
    infiniband: tuple[str, ...] | None
    infiniband_error: str | None
    peermem_built: bool | None
    rdma: RdmaFacts
    nvswitch_pci: tuple[str, ...]
    fabric_state: int | None
    fabric_ref: str | None
    fabricmanager: Service | None
    install: InstallFacts
    fabric_version: FabricVersion | None
    internode: Internode | None = None
    """Whether the servers here talk to other nodes (what GPUDirect RDMA would carry)."""
    licenses: tuple[VgpuLicense, ...] = ()
    """NVML's licensable features of each NVIDIA vGPU (empty: no vGPU here)."""
    persistenced_unit: PersistencedUnit | None = None
    """nvidia-persistenced's unit and the options it starts the daemon with."""
    fabricmanager_log: UnitLog | None = None
    """nvidia-fabricmanager's own account of its last start (read only when it is not active)."""
    persistenced_log: UnitLog | None = None
    """nvidia-persistenced's own account of its last start (read only when it is not active)."""
    fabric_cluster: str | None = None
    """NVML fabric info's cluster UUID (all zeros off a multi-node NVLink domain; None: not read)."""
    fabric_clique: int | None = None
    imex: ImexFacts | None = None
    """The IMEX service, read only where the GPUs are in a multi-node NVLink domain (:func:`multi_node`)."""
    nvlsm: Nvlsm | None = None
    """NVLSM's own state (read only when the fabric manager is not active on Blackwell or newer GPUs)."""
    conf_compute: ConfCompute = ConfCompute(on=None, devtools=False, ready=None, error="not read", asked=False)
    """NVML's confidential-computing state and the GPUs' ready state."""
    cdi: CdiUse = CdiUse(False, "not read")
    """Whether the container the audit runs in got its GPUs through CDI (its device nodes are the host spec's)."""
    host_cdi: HostCdi | None = None
    """The host's CDI specs for its GPUs (None: not read, as in a container)."""


RACK_GPUS = r"\bGB[23]00\b"
"""GPUs of a multi-node NVLink rack's compute trays (GB200, GB300 NVL): their NVLink switches are the rack's switch
trays, whose NVOS runs the fabric manager and NVLSM (NMX-Controller); a compute tray runs IMEX, no fabric manager."""
NO_CLUSTER = "00000000-0000-0000-0000-000000000000"


def multi_node(gpus: tuple[Gpu, ...], cluster: str | None) -> bool:
    """The GPUs are in a multi-node NVLink domain: NVML gives their fabric a cluster UUID, or they are a rack's."""
    return (cluster is not None and cluster.strip() not in ("", NO_CLUSTER)) or any(
        re.search(RACK_GPUS, g.name or "") for g in gpus
    )


# -- collect ---------------------------------------------------------------------------------


async def _nvswitch_pci(probe: Probe) -> tuple[str, ...]:
    """NVIDIA bridge devices (class 0x0680): NVSwitches. Re-uses the reads collect_gpus made."""
    listing = await probe.list_dir(PCI_DEVICES)
    bdfs = list(listing.entries or ())
    vendors = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/vendor") for b in bdfs])
    nvidia = [b for b, v in zip(bdfs, vendors, strict=True) if v is not None and v.strip().lower() == NVIDIA_VENDOR]
    classes = await probe.gather(*[lambda b=b: probe.text(f"{PCI_DEVICES}/{b}/class") for b in nvidia])
    return tuple(b for b, c in zip(nvidia, classes, strict=True) if c is not None and c.strip().lower().startswith("0x0680"))


async def _service(probe: Probe, argv: tuple[str, ...]) -> Service:
    result = await probe.run(argv)
    answer = result.stdout.strip().splitlines()[0] if result.error is None and result.stdout.strip() else None
    return Service(answer, result.error, command_ref(argv))


async def _per_gpu(probe: Probe, fn: str, indices: list[int]) -> dict[int, int | None]:
    results = await probe.gather(*[lambda i=i: probe.nvml(fn, i) for i in indices])
    return {i: r.value if r.ok and isinstance(r.value, int) else None for i, r in zip(indices, results, strict=True)}


class FabricInfo(Record):
    """NVML's fabric info of the first GPU: its registration state and, on a multi-node NVLink domain, cluster/clique."""

    state: int | None = None
    ref: str | None = None
    cluster: str | None = None
    clique: int | None = None


async def _fabric_info(probe: Probe, indices: list[int]) -> FabricInfo:
    if not indices:
        return FabricInfo()
    ref = nvml_ref("nvmlDeviceGetGpuFabricInfo", (indices[0],))
    fabric = await probe.nvml("nvmlDeviceGetGpuFabricInfo", indices[0])
    if not fabric.ok or not isinstance(fabric.value, dict):
        return FabricInfo(ref=ref)
    info = fabric.value
    return FabricInfo(
        state=info["state"] if isinstance(info.get("state"), int) else None,
        ref=ref,
        cluster=info["clusterUuid"] if isinstance(info.get("clusterUuid"), str) else None,
        clique=info["cliqueId"] if isinstance(info.get("cliqueId"), int) else None,
    )


async def _peermem_built(probe: Probe, osrelease: str | None) -> bool | None:
    """nvidia-peermem.ko is in the running kernel's modules.dep (None: not read)."""
    if osrelease is None:
        return None
    dep = await probe.text(f"/lib/modules/{osrelease.strip()}/modules.dep")
    return None if dep is None else "nvidia-peermem.ko" in dep or "nvidia_peermem.ko" in dep


def _has_nvswitch(nvswitch_pci: tuple[str, ...], dev: tuple[str, ...] | None, fabric_state: int | None) -> bool:
    """NVSwitches on the PCI bus, their device nodes, or an NVML fabric state that only NVSwitch systems report."""
    nodes = any(re.fullmatch(r"nvidia-nvswitch\d+", e) for e in dev or ())
    return bool(nvswitch_pci) or nodes or fabric_state in (1, 2, 3)


async def _stopped_daemons(
    probe: Probe,
    fabricmanager: Service | None,
    persistenced: Service,
    persistence: dict[int, int | None],
    archs: dict[int, int | None],
) -> tuple[UnitLog | None, Nvlsm | None, UnitLog | None]:
    """The own accounts of the daemons that are down: the fabric manager's log (and NVLSM's state on NVLink 5), and
    nvidia-persistenced's where a GPU has persistence off."""
    down = (None, "active")
    fm_log = await read_unit(probe, "nvidia-fabricmanager", FM_LOG) if fabricmanager and fabricmanager.state not in down else None
    nvlink5 = any(a is not None and a >= BLACKWELL for a in archs.values())
    nvlsm = await collect_nvlsm(probe) if fm_log is not None and nvlink5 else None
    pd_off = persistenced.state not in down and 0 in persistence.values()
    pd_log = await read_unit(probe, "nvidia-persistenced") if pd_off else None
    return fm_log, nvlsm, pd_log


async def _conf_compute(probe: Probe, inventory: GpuInventory) -> ConfCompute:
    if inventory.nvml_ok:
        return await read_conf_compute(probe)
    return ConfCompute(on=None, devtools=False, ready=None, error=inventory.nvml_error, asked=False)


async def collect(probe: Probe) -> DriverFacts:
    names = (PROC_VERSION, MODULE_VERSION, MODULES, "/proc/devices", "/proc/sys/kernel/osrelease")
    files = await probe.gather(*[lambda p=p: probe.read(p) for p in names])
    proc_version, module_version, modules, devices, osrelease = (f.text() for f in files)
    ib = await rdma_devices(probe)
    dev = await probe.list_dir("/dev")
    peermem_built = await _peermem_built(probe, osrelease)
    inventory: GpuInventory = await collect_gpus(probe)
    nvswitch_pci = await _nvswitch_pci(probe)
    indices = inventory.nvml_indices
    archs = await _per_gpu(probe, "nvmlDeviceGetArchitecture", indices)
    persistence = await _per_gpu(probe, "nvmlDeviceGetPersistenceMode", indices)
    fabric = await _fabric_info(probe, indices)
    platform = await detect_platform(probe)
    persistenced = await _service(probe, PERSISTENCED)
    nvswitch = _has_nvswitch(nvswitch_pci, dev.entries, fabric.state)
    fabricmanager = await _service(probe, FABRICMANAGER) if nvswitch else None
    install = await collect_install(probe)
    fabric_version = await collect_fabric_version(probe) if nvswitch else None
    fm_log, nvlsm, pd_log = await _stopped_daemons(probe, fabricmanager, persistenced, persistence, archs)
    return DriverFacts(
        platform=platform,
        gpus=inventory.gpus,
        nvml_init=(await probe.nvml("nvmlInit")).ok,
        nvml_ok=inventory.nvml_ok,
        nvml_error=inventory.nvml_error,
        nvml_version=inventory.driver_version,
        proc_version=proc_version,
        module_version=module_version.strip() if module_version else None,
        archs=archs,
        persistence=persistence,
        persistenced=persistenced,
        persistenced_unit=await collect_persistenced_unit(probe),
        modules=None if modules is None else frozenset(line.split()[0] for line in modules.splitlines() if line.strip()),
        modules_error=files[2].error,
        proc_devices=devices,
        dev=dev.entries,
        infiniband=ib.entries,
        infiniband_error=ib.error,
        peermem_built=peermem_built,
        rdma=await collect_rdma(probe),
        nvswitch_pci=nvswitch_pci,
        fabric_state=fabric.state,
        fabric_ref=fabric.ref,
        fabric_cluster=fabric.cluster,
        fabric_clique=fabric.clique,
        fabricmanager=fabricmanager,
        install=install,
        fabric_version=fabric_version,
        internode=await collect_internode(probe) if ib.entries else None,
        licenses=await collect_licenses(probe, inventory.gpus),
        fabricmanager_log=fm_log,
        persistenced_log=pd_log,
        imex=await collect_imex(probe, devices) if multi_node(inventory.gpus, fabric.cluster) else None,
        nvlsm=nvlsm,
        cdi=await read_cdi(probe, platform),
        host_cdi=None if platform.in_container or not inventory.gpus else await read_host_cdi(probe),
        conf_compute=await _conf_compute(probe, inventory),
    )


# -- helpers shared by the driver rules ----------------------------------------------------


def fix_where(platform: Platform) -> Where:
    """Modules and driver services live with the kernel: the container's host when we run in a container."""
    return layer_where(platform, "gpu_driver")


def rack_gpus(facts: DriverFacts) -> list[Gpu]:
    """The GPUs that make this host a multi-node NVLink rack's compute tray (none elsewhere)."""
    return [g for g in facts.gpus if re.search(RACK_GPUS, g.name or "")]


def gpu_labels(facts: DriverFacts, indices: list[int]) -> tuple[str, ...]:
    return tuple(g.label for g in facts.gpus if g.index in indices)


def kernel_log(facts: DriverFacts) -> str | None:
    """The kernel log's text, or None when it could not be read."""
    dmesg = facts.install.dmesg
    return dmesg.stdout if dmesg.error is None and dmesg.exit_code == 0 else None


def module_loaded(facts: DriverFacts, name: str) -> bool | None:
    return None if facts.modules is None else name in facts.modules


def modules_unknown(check: Check, facts: DriverFacts) -> Finding:
    """``check`` cannot tell: /proc/modules is not readable."""
    return check.unknown(f"{MODULES} not readable: {facts.modules_error}", evidence=(file_ref(MODULES),))


def passed_through(check: Check, facts: DriverFacts) -> Finding:
    """Every GPU is bound to vfio-pci for a guest: the driver and its daemons are the guest's, none runs here."""
    origin = facts.install.origin
    why = f"{origin.said}: in NVIDIA's full-passthrough model the driver, its daemons and the fabric manager run in the "
    why += f"guest, not on this host; judge them there ({PASSTHROUGH_SOURCE})"
    return check.not_applicable(why, evidence=origin.evidence)
