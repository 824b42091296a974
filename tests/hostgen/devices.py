"""PCI function factories: GPUs, NVSwitches, NICs, NVMe drives, root ports and switch ports.

Each factory returns a :class:`~tests.hostgen.pci.Function` whose configuration space follows the
capability layout that device family really has (offsets as ``lspci -vvv`` shows them on such devices).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.hostgen import pciconfig as pc
from tests.hostgen.catalog import GIB, MIB, PCI, GpuModel
from tests.hostgen.pci import Function


@dataclass
class Mmio:
    """Hands out aligned BAR addresses, as firmware does (32-bit window low, 64-bit window high)."""

    low: int = 0x9000_0000
    high: int = 0x2000_0000_0000
    _low_next: int = field(default=0, init=False)
    _high_next: int = field(default=0, init=False)
    _serial: int = field(default=0x48B02DFD144A2B26, init=False)

    def serial(self) -> int:
        """The next Device Serial Number (per build, so that builds are deterministic)."""
        self._serial += 0x1000193
        return self._serial

    def take(self, size: int, bits64: bool) -> int:
        if bits64:
            cursor = max(self._high_next, self.high)
            address = (cursor + size - 1) // size * size
            self._high_next = address + size
        else:
            cursor = max(self._low_next, self.low)
            address = (cursor + size - 1) // size * size
            self._low_next = address + size
        return address


def _bars(mmio: Mmio, layout: list[tuple[int, bool, bool]]) -> tuple[tuple[pc.Bar | None, ...], tuple[int, ...]]:
    """``layout``: (size, 64-bit, prefetchable) per BAR in slot order; returns (bars by slot, sizes by slot)."""
    bars: list[pc.Bar | None] = []
    sizes: list[int] = []
    for size, bits64, pref in layout:
        if size == 0:
            bars.append(None)
            sizes.append(0)
            continue
        bars.append(pc.Bar(mmio.take(size, bits64), bits64, pref))
        sizes.append(size)
        if bits64:
            bars.append(None)
            sizes.append(0)
    return tuple(bars), tuple(sizes)


# -- GPUs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuPci:
    """What a GPU's config space shows that the host decides (link state, payloads, BAR1 size, guest view)."""

    max_read_request: int = 4096
    max_payload: int = 256
    current_gen: int | None = None
    current_width: int | None = None
    width: int = 16
    bar1_bytes: int | None = None
    """BAR1 as programmed (None: the model's full size)."""
    guest: bool = False
    """Seen by a VM guest through vfio: hidden ReBAR/SR-IOV/ARI/VC, relinked list."""
    extended_tags: bool = True
    relaxed_ordering: bool = True
    integrated: bool = False
    """On a q35 guest's root bus: vfio makes the GPU a root-complex integrated endpoint whose Link Capabilities and
    Link Status read zero (QEMU hw/vfio/pci.c vfio_setup_pcie_cap); the driver still reads the real link."""


def gpu(model: GpuModel, mmio: Mmio, index: int, pci: GpuPci, slot: int = 0) -> Function:
    bar1 = pci.bar1_bytes or model.bar1_bytes
    if model.bar0_64bit:
        layout = [(64 * MIB, True, True), (bar1, True, True), (32 * MIB, True, True)]
    else:
        layout = [(16 * MIB, False, False), (bar1, True, True), (32 * MIB, True, True)]
        if model.vga:
            layout.append((128, False, False))
    bars, sizes = _bars(mmio, layout)
    if model.vga:
        bars = (*bars[:5], pc.Bar(12288 + 256 * index, False, False, io=True))
        sizes = (*sizes[:5], 128)
    express = pc.Express(
        pc.PORT_RCIEP if pci.integrated else pc.PORT_LEGACY if model.vga else pc.PORT_ENDPOINT,
        max_payload_supported=256,
        max_payload=pci.max_payload,
        max_read_request=pci.max_read_request,
        extended_tags=pci.extended_tags,
        relaxed_ordering=pci.relaxed_ordering,
        flr=True,
        link_speed=0 if pci.integrated else model.pcie_gen,
        link_width=0 if pci.integrated else pci.width,
        current_speed=pci.current_gen,
        current_width=pci.current_width,
        aspm_support=0x2 if not model.vga else 0x3,
        ten_bit_tags=model.arch >= 9,
    )
    serial = mmio.serial()
    rebar_bar = 2 if model.bar0_64bit else 1
    hopper = model.bar0_64bit

    def config(function: Function) -> pc.ConfigSpec:
        assert function.express is not None
        exp = function.express.body()
        if hopper:
            caps = (
                pc.Cap(0x40, pc.CAP_PM, pc.pm()),
                pc.Cap(0x48, pc.CAP_MSI, pc.msi()),
                pc.Cap(0x60, pc.CAP_EXP, exp),
                pc.Cap(0xB0, pc.CAP_MSIX, pc.msix(9)),
            )
            linked = [
                pc.Cap(0x100, pc.EXT_VC, pc.zeros(0x28)),
                pc.Cap(0x12C, pc.EXT_LTR, pc.ltr(0, 0)),
                pc.Cap(0x134, pc.EXT_REBAR, pc.rebar(rebar_bar, bar1, model.bar1_bytes)),
                pc.Cap(0x148, pc.EXT_DLF, pc.zeros(8)),
                pc.Cap(0x158, pc.EXT_PL16, pc.zeros(0x2C)),
                pc.Cap(0x188, pc.EXT_PL32, pc.zeros(0x2C)),
                pc.Cap(0x1B8, pc.EXT_AER, pc.aer(), version=2),
                pc.Cap(0x200, pc.EXT_LMR, pc.zeros(0x44)),
                pc.Cap(0x248, pc.EXT_ARI, pc.ari()),
                pc.Cap(0x250, pc.EXT_SRIOV, pc.sriov(32, model.device_id + 1)),
                pc.Cap(0x2A4, pc.EXT_VNDR, bytes([0x01, 0x00, 0x41, 0x01]) + pc.zeros(0xC)),
                pc.Cap(0x2B8, pc.EXT_PWR, pc.zeros(0xC)),
                pc.Cap(0x2F0, pc.EXT_DSN, pc.dsn(serial)),
            ]
        else:
            caps = (
                pc.Cap(0x60, pc.CAP_PM, pc.pm()),
                pc.Cap(0x68, pc.CAP_MSI, pc.msi()),
                pc.Cap(0x78, pc.CAP_EXP, exp),
                pc.Cap(0xB4, pc.CAP_VNDR, pc.vendor_cap()),
                pc.Cap(0xC8, pc.CAP_MSIX, pc.msix(6)),
            )
            linked = [
                pc.Cap(0x100, pc.EXT_VC, pc.zeros(0x20)),
                pc.Cap(0x250, pc.EXT_LTR, pc.ltr()),
                pc.Cap(0x258, pc.EXT_L1SS, pc.zeros(0xC)),
                pc.Cap(0x128, pc.EXT_PWR, pc.zeros(0xC)),
                pc.Cap(0x420, pc.EXT_AER, pc.aer(), version=2),
                pc.Cap(0x600, pc.EXT_VNDR, bytes([0x01, 0x00, 0x41, 0x02]) + pc.zeros(0x1C)),
                pc.Cap(0x900, pc.EXT_SECPCI, pc.zeros(0x28)),
                pc.Cap(0xBB0, pc.EXT_REBAR, pc.rebar(rebar_bar, bar1, model.bar1_bytes)),
            ]
            if model.product_brand != "GeForce":
                linked += [pc.Cap(0xBCC, pc.EXT_SRIOV, pc.sriov(32, model.device_id + 1)), pc.Cap(0xC14, pc.EXT_ARI, pc.ari())]
            linked += [
                pc.Cap(0xC1C, pc.EXT_PL16, pc.zeros(0x2C)),
                pc.Cap(0xD00, pc.EXT_LMR, pc.zeros(0x44)),
                pc.Cap(0xE00, pc.EXT_DLF, pc.zeros(8)),
            ]
        hidden: frozenset[int] = frozenset()
        stray: tuple[pc.Cap, ...] = ()
        if pci.guest:
            # QEMU's vfio drops ReBAR, SR-IOV and ARI (and shows the first one as a Null header); the
            # physical-layer capabilities it does not model are left unreachable.
            hidden = frozenset({pc.EXT_VC, pc.EXT_REBAR, pc.EXT_SRIOV, pc.EXT_ARI})
            unmodelled = {pc.EXT_DLF, pc.EXT_PL16, pc.EXT_PL32, pc.EXT_LMR, pc.EXT_L1SS, pc.EXT_SECPCI}
            stray = tuple(c for c in linked if c.id in unmodelled)
            linked = [c for c in linked if c.id not in unmodelled]
        return pc.ConfigSpec(
            vendor=0x10DE,
            device=model.device_id,
            class_code=0x030000 if model.vga else 0x030200,
            revision=0xA1,
            subsystem=model.subsystem,
            multifunction=model.audio_function is not None,
            command=0x0407 if model.vga else 0x0406,
            bars=bars,
            interrupt=(0xFF, 1),
            caps=caps,
            ext=tuple(linked),
            hidden_ext=hidden,
            stray=stray,
        )

    return Function(
        "gpu",
        0x10DE,
        model.device_id,
        0x030000 if model.vga else 0x030200,
        config,
        revision=0xA1,
        subsystem=model.subsystem,
        driver="nvidia",
        express=express,
        slot=slot,
        name=f"{'VGA compatible controller' if model.vga else '3D controller'}: NVIDIA Corporation {_lspci_gpu(model)}",
        tag=f"GPU{index}",
        bar_sizes=sizes,
        extra={"boot_vga": "0"} if model.vga else {},
    )


def _lspci_gpu(model: GpuModel) -> str:
    words = {
        "h100-sxm": "GH100 [H100 SXM5 80GB]",
        "h200-sxm": "GH100 [H200 SXM 141GB]",
        "a100-sxm-80": "GA100 [A100 SXM4 80GB]",
        "l40s": "AD102GL [L40S]",
        "l4": "AD104GL [L4]",
        "a10g": "GA102GL [A10G]",
        "rtx4090": "AD102 [GeForce RTX 4090]",
        "h100-pcie": "GH100 [H100 PCIe]",
        "gh200": "GH100 [GH200 120GB / 480GB]",
    }
    return words.get(model.key, f"Device {model.device_id:04x}")


def gpu_audio(model: GpuModel, mmio: Mmio, index: int) -> Function:
    """The HDMI audio function (.1) of a GeForce board."""
    assert model.audio_function is not None
    bars, sizes = _bars(mmio, [(16 * 1024, False, False)])
    express = pc.Express(pc.PORT_ENDPOINT, link_speed=model.pcie_gen, max_read_request=512, flr=True)
    info = PCI["nv-audio"]

    def config(function: Function) -> pc.ConfigSpec:
        assert function.express is not None
        return pc.ConfigSpec(
            0x10DE,
            model.audio_function or 0,
            0x040300,
            0xA1,
            model.subsystem,
            multifunction=True,
            bars=bars,
            interrupt=(0xFF, 2),
            caps=(
                pc.Cap(0x60, pc.CAP_PM, pc.pm()),
                pc.Cap(0x68, pc.CAP_MSI, pc.msi(0)),
                pc.Cap(0x78, pc.CAP_EXP, function.express.body()),
            ),
            ext=(pc.Cap(0x100, pc.EXT_DLF, pc.zeros(8)),),
        )

    return Function(
        "audio",
        0x10DE,
        model.audio_function,
        0x040300,
        config,
        revision=0xA1,
        subsystem=model.subsystem,
        driver="snd_hda_intel",
        express=express,
        fn=1,
        name=info.name,
        tag=f"GPU{index}-audio",
        bar_sizes=sizes,
        aer=False,
    )


# -- other endpoints ------------------------------------------------------------------------


def endpoint(
    key: str,
    mmio: Mmio,
    tag: str,
    *,
    gen: int = 4,
    width: int = 16,
    slot: int = 0,
    fn: int = 0,
    bar_layout: list[tuple[int, bool, bool]] | None = None,
    sriov_vfs: int = 0,
    max_read_request: int = 512,
    max_payload: int = 256,
    driver: str | None = None,
    guest: bool = False,
    virtual_function: bool = False,
) -> Function:
    """A NIC, NVMe drive, NVSwitch or similar endpoint with a common capability layout. ``virtual_function``: an SR-IOV
    VF as a guest it is passed to sees it (Express and MSI-X only: no power management, SR-IOV, ARI or serial number;
    AER is the hypervisor's)."""
    info = PCI[key]
    bars, sizes = _bars(mmio, bar_layout or [(32 * MIB, True, True)])
    express = pc.Express(
        pc.PORT_ENDPOINT,
        max_payload_supported=512,
        max_payload=max_payload,
        max_read_request=max_read_request,
        link_speed=gen,
        link_width=width,
        flr=True,
    )
    serial = mmio.serial()

    def config(function: Function) -> pc.ConfigSpec:
        assert function.express is not None
        caps = (
            pc.Cap(0x40, pc.CAP_PM, pc.pm()),
            pc.Cap(0x60, pc.CAP_EXP, function.express.body()),
            pc.Cap(0x9C, pc.CAP_MSIX, pc.msix(64, table=0x2000, pba=0x3000)),
        )
        if virtual_function:
            vf_caps = (
                pc.Cap(0x60, pc.CAP_EXP, function.express.body()),
                pc.Cap(0x9C, pc.CAP_MSIX, pc.msix(64, table=0x2000, pba=0x3000)),
            )
            return pc.ConfigSpec(
                info.vendor, info.device, info.class_code, info.revision, info.subsystem, bars=bars, caps=vf_caps
            )
        ext = [pc.Cap(0x100, pc.EXT_AER, pc.aer(), version=2)]
        if not guest:
            ext += [pc.Cap(0x150, pc.EXT_ARI, pc.ari())]
            if sriov_vfs:
                ext += [pc.Cap(0x180, pc.EXT_SRIOV, pc.sriov(sriov_vfs, info.device + 1))]
            ext += [pc.Cap(0x1C0, pc.EXT_SECPCI, pc.zeros(0x28))]
            if gen >= 4:
                ext += [pc.Cap(0x230, pc.EXT_PL16, pc.zeros(0x2C)), pc.Cap(0x320, pc.EXT_LMR, pc.zeros(0x44))]
            ext += [pc.Cap(0x370, pc.EXT_DLF, pc.zeros(8))]
        ext += [pc.Cap(0x3C0, pc.EXT_DSN, pc.dsn(serial))]
        return pc.ConfigSpec(
            info.vendor,
            info.device,
            info.class_code,
            info.revision,
            info.subsystem,
            multifunction=fn > 0,
            bars=bars,
            caps=caps,
            ext=tuple(ext),
        )

    role = {"01": "nvme", "02": "nic", "06": "nvswitch"}.get(f"{info.class_code >> 16:02x}", "other")
    function = Function(
        role,
        info.vendor,
        info.device,
        info.class_code,
        config,
        revision=info.revision,
        subsystem=info.subsystem,
        driver=driver if driver is not None else info.driver,
        express=express,
        slot=slot,
        fn=fn,
        name=info.name,
        tag=tag,
        bar_sizes=sizes,
    )
    function.aer = not virtual_function
    return function


def legacy(key: str, mmio: Mmio, tag: str, *, slot: int, fn: int = 0, express: bool = False) -> Function:
    """Conventional PCI functions of a VM or a chipset (host bridges, ISA bridge, virtio, BMC VGA)."""
    info = PCI[key]
    is_bridge = info.class_code >> 8 == 0x0604
    bars, sizes = _bars(mmio, [(0x1000, False, False)]) if info.class_code >> 16 not in (0x06,) else ((), ())
    exp = pc.Express(pc.PORT_RCIEP, link_speed=1, link_width=1) if express else None

    def config(function: Function) -> pc.ConfigSpec:
        caps: tuple[pc.Cap, ...] = ()
        if info.vendor in (0x1AF4, 0x1D0F, 0x1AE0):
            caps += (pc.Cap(0x40, pc.CAP_MSIX, pc.msix(3, table=0x1000, pba=0x1800)),)
        if function.express is not None:
            caps += (pc.Cap(0x70, pc.CAP_EXP, function.express.body()),)
        return pc.ConfigSpec(
            info.vendor,
            info.device,
            info.class_code,
            info.revision,
            info.subsystem,
            header_type=1 if is_bridge else 0,
            bars=bars,
            bus=(0, function.secondary, function.subordinate) if is_bridge else (0, 0, 0),
            caps=caps,
        )

    role = "host_bridge" if info.class_code >> 8 == 0x0600 else "bridge" if is_bridge else "other"
    return Function(
        role,
        info.vendor,
        info.device,
        info.class_code,
        config,
        revision=info.revision,
        subsystem=info.subsystem,
        driver=info.driver,
        express=exp,
        slot=slot,
        fn=fn,
        name=info.name,
        tag=tag,
        bar_sizes=sizes,
        aer=False,
    )


# -- bridges --------------------------------------------------------------------------------


def port(
    key: str,
    kind: int,
    tag: str,
    *,
    gen: int,
    width: int = 16,
    slot: int = 0,
    fn: int = 0,
    port_number: int = 0,
    acs_control: int | None = None,
    acs_capability: int = pc.ACS_SV | pc.ACS_TB | pc.ACS_RR | pc.ACS_CR | pc.ACS_UF | pc.ACS_DT,
    max_payload: int = 256,
    max_payload_supported: int = 512,
    physical_slot: int | None = None,
) -> Function:
    """A root port, switch upstream port or switch downstream port (ACS where the port type has it)."""
    info = PCI[key]
    express = pc.Express(
        kind,
        max_payload_supported=max_payload_supported,
        max_payload=max_payload,
        max_read_request=512,
        link_speed=gen,
        link_width=width,
        port_number=port_number,
        slot=physical_slot,
        extended_tags=False,
    )
    has_acs = kind in (pc.PORT_ROOT, pc.PORT_DOWNSTREAM)

    def config(function: Function) -> pc.ConfigSpec:
        assert function.express is not None
        caps = (
            pc.Cap(0x40, pc.CAP_PM, pc.pm()),
            pc.Cap(0x48, pc.CAP_MSI, pc.msi(0, enabled=True)),
            pc.Cap(0x68, pc.CAP_EXP, function.express.body()),
            pc.Cap(0xA4, pc.CAP_SSVID, pc.subsystem_cap(*info.subsystem)),
        )
        ext = [pc.Cap(0x100, pc.EXT_AER, pc.aer(root_port=kind == pc.PORT_ROOT), version=2)]
        if has_acs:
            ext.append(pc.Cap(0x148, pc.EXT_ACS, pc.acs(acs_capability, function.acs_control or 0)))
        ext.append(pc.Cap(0x158, pc.EXT_SECPCI, pc.zeros(0x28)))
        ext.append(pc.Cap(0x188, pc.EXT_DLF, pc.zeros(8)))
        if gen >= 4:
            ext.append(pc.Cap(0x198, pc.EXT_PL16, pc.zeros(0x2C)))
        if gen >= 5:
            ext.append(pc.Cap(0x1C8, pc.EXT_PL32, pc.zeros(0x2C)))
        if gen >= 4:
            ext.append(pc.Cap(0x1F8, pc.EXT_LMR, pc.zeros(0x44)))
        if kind in (pc.PORT_ROOT, pc.PORT_DOWNSTREAM):
            ext.append(pc.Cap(0x240, pc.EXT_DPC, pc.zeros(0x40)))
        return pc.ConfigSpec(
            info.vendor,
            info.device,
            0x060400,
            info.revision,
            info.subsystem,
            header_type=1,
            command=0x0407,
            bus=(0, function.secondary, function.subordinate),
            caps=caps,
            ext=tuple(ext),
        )

    role = {pc.PORT_ROOT: "root_port", pc.PORT_UPSTREAM: "upstream", pc.PORT_DOWNSTREAM: "downstream"}[kind]
    return Function(
        role,
        info.vendor,
        info.device,
        0x060400,
        config,
        revision=info.revision,
        subsystem=info.subsystem,
        driver="pcieport",
        express=express,
        slot=slot,
        fn=fn,
        name=info.name,
        tag=tag,
        acs_control=acs_control if has_acs else None,
        irq=0,
    )


def qemu_root_port(tag: str, *, slot: int, fn: int, port_number: int, gen: int = 4, width: int = 32) -> Function:
    """QEMU's ``pcie-root-port`` (1b36:000c), as a q35 guest sees it: Express at 0x54, MSI-X at 0x48, the subsystem
    at 0x40, AER at 0x100 and ACS at 0x148. Its link is whatever ``x-speed``/``x-width`` say (16 GT/s x32 by default
    since QEMU 4.0, 2.5 GT/s x1 for older machine types), not the physical slot's."""
    info = PCI["qemu-rp"]
    express = pc.Express(
        pc.PORT_ROOT,
        max_payload_supported=128,
        max_payload=128,
        max_read_request=512,
        extended_tags_supported=False,
        extended_tags=False,
        link_speed=gen,
        link_width=width,
        current_width=min(width, 16),
        port_number=port_number,
        slot=port_number - 0x10,
        aspm_support=0x1,
        ten_bit_tags=False,
        ltr=False,
    )

    def config(function: Function) -> pc.ConfigSpec:
        assert function.express is not None
        return pc.ConfigSpec(
            info.vendor,
            info.device,
            0x060400,
            info.revision,
            info.subsystem,
            header_type=1,
            multifunction=fn == 0,
            command=0x0107,
            bus=(0, function.secondary, function.subordinate),
            caps=(
                pc.Cap(0x54, pc.CAP_EXP, function.express.body()),
                pc.Cap(0x48, pc.CAP_MSIX, pc.msix(1, table=0x0, pba=0x800)),
                pc.Cap(0x40, pc.CAP_SSVID, pc.subsystem_cap(*info.subsystem)),
            ),
            ext=(
                pc.Cap(0x100, pc.EXT_AER, pc.aer(root_port=True), version=2),
                pc.Cap(0x148, pc.EXT_ACS, pc.acs(pc.ACS_SV | pc.ACS_TB | pc.ACS_RR | pc.ACS_CR | pc.ACS_UF, 0)),
            ),
        )

    return Function(
        "root_port",
        info.vendor,
        info.device,
        0x060400,
        config,
        revision=info.revision,
        subsystem=info.subsystem,
        driver="pcieport",
        express=express,
        slot=slot,
        fn=fn,
        name=info.name,
        tag=tag,
        acs_control=0,
        irq=0,
    )


def with_link(function: Function, *, gen: int | None = None, width: int | None = None) -> None:
    """Train a function's link down (current speed/width below its capability), in place."""
    assert function.express is not None
    function.express = replace(function.express, current_speed=gen, current_width=width)


BAR1_SMALL = 256 * MIB
"""BAR1 of a GPU whose firmware leaves Resizable BAR off (or has no Above 4G decoding)."""
_ = GIB
