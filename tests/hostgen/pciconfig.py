"""PCI configuration space images (4096 bytes) as real devices expose them in sysfs ``config``.

A :class:`ConfigSpec` names the header fields, the capability list (offset, id, body) and the extended
capability list; :func:`render` lays them out with correct next pointers, so that ``lspci -vvv -F`` and
tools/pci decode them. The capability bodies are built by the helpers below from named fields
(``pci_regs.h`` layouts), never by hand-written hex.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

CONFIG_SIZE = 4096

# Standard capability ids
CAP_PM, CAP_MSI, CAP_VNDR, CAP_EXP, CAP_MSIX, CAP_SSVID = 0x01, 0x05, 0x09, 0x10, 0x11, 0x0D
# Extended capability ids
EXT_AER, EXT_VC, EXT_DSN, EXT_PWR, EXT_VNDR, EXT_ACS, EXT_ARI, EXT_SRIOV = 0x01, 0x02, 0x03, 0x04, 0x0B, 0x0D, 0x0E, 0x10
EXT_REBAR, EXT_LTR, EXT_SECPCI, EXT_DPC, EXT_L1SS, EXT_DLF, EXT_PL16, EXT_LMR, EXT_PL32 = (
    0x15,
    0x18,
    0x19,
    0x1D,
    0x1E,
    0x25,
    0x26,
    0x27,
    0x2A,
)

PORT_ENDPOINT, PORT_LEGACY, PORT_ROOT, PORT_UPSTREAM, PORT_DOWNSTREAM, PORT_RCIEP = 0x0, 0x1, 0x4, 0x5, 0x6, 0x9
PAYLOAD_CODES = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


@dataclass(frozen=True)
class Cap:
    """One capability: its offset, id, version (extended only) and the bytes after its header."""

    offset: int
    id: int
    body: bytes
    version: int = 1


@dataclass(frozen=True)
class Bar:
    """A memory BAR as programmed: ``size`` is documentation (sizes are probed, not stored)."""

    address: int
    bits64: bool = True
    prefetchable: bool = True
    io: bool = False


@dataclass(frozen=True)
class ConfigSpec:
    vendor: int
    device: int
    class_code: int
    revision: int = 0
    subsystem: tuple[int, int] = (0, 0)
    header_type: int = 0
    multifunction: bool = False
    command: int = 0x0406
    status: int = 0x0010
    bars: tuple[Bar | None, ...] = ()
    """By BAR slot: a 64-bit BAR is followed by ``None`` for its upper half."""
    bus: tuple[int, int, int] = (0, 0, 0)
    """Bridges: primary, secondary, subordinate bus numbers."""
    interrupt: tuple[int, int] = (0xFF, 1)
    caps: tuple[Cap, ...] = ()
    ext: tuple[Cap, ...] = ()
    hidden_ext: frozenset[int] = field(default_factory=frozenset)
    """Extended capability ids a hypervisor hides from a guest (header kept, id 0: lspci says Null)."""
    stray: tuple[Cap, ...] = ()
    """Extended capabilities whose bytes are there but which no pointer reaches (a guest's view after the
    hypervisor relinked the list)."""


def _put(buf: bytearray, offset: int, fmt: str, *values: int) -> None:
    struct.pack_into("<" + fmt, buf, offset, *values)


def render(spec: ConfigSpec) -> bytes:
    buf = bytearray(CONFIG_SIZE)
    _put(buf, 0x00, "HHHH", spec.vendor, spec.device, spec.command, spec.status | (0x10 if spec.caps else 0))
    _put(buf, 0x08, "I", spec.revision | (spec.class_code << 8))
    buf[0x0E] = spec.header_type | (0x80 if spec.multifunction else 0)
    slots = 6 if spec.header_type == 0 else 2
    for index, bar in enumerate(spec.bars[:slots]):
        if bar is None:
            continue  # unused, or the upper half of the 64-bit BAR before it
        at = 0x10 + 4 * index
        if bar.io:
            _put(buf, at, "I", (bar.address & 0xFFFFFFFC) | 0x1)
            continue
        flags = (0x4 if bar.bits64 else 0) | (0x8 if bar.prefetchable else 0)
        _put(buf, at, "I", (bar.address & 0xFFFFFFF0) | flags)
        if bar.bits64 and index + 1 < slots:
            _put(buf, at + 4, "I", bar.address >> 32)
    if spec.header_type == 0:
        _put(buf, 0x2C, "HH", *spec.subsystem)
    else:
        primary, secondary, subordinate = spec.bus
        buf[0x18], buf[0x19], buf[0x1A] = primary, secondary, subordinate
        _put(buf, 0x1C, "BB", 0xF1, 0x01)  # I/O window closed
        _put(buf, 0x20, "HH", 0xFFF0, 0x0000)  # windows are left closed: addresses are not modelled
        _put(buf, 0x24, "HH", 0xFFF1, 0x0001)
        _put(buf, 0x3E, "H", 0x0010)  # bridge control: SERR# forwarding... kept minimal
    buf[0x3C], buf[0x3D] = spec.interrupt
    caps = sorted(spec.caps, key=lambda c: c.offset)
    if caps:
        buf[0x34] = caps[0].offset
    for i, cap in enumerate(caps):
        following = caps[i + 1].offset if i + 1 < len(caps) else 0
        buf[cap.offset] = cap.id
        buf[cap.offset + 1] = following
        buf[cap.offset + 2 : cap.offset + 2 + len(cap.body)] = cap.body
    ext = list(spec.ext)
    for i, cap in enumerate(ext):
        following = ext[i + 1].offset if i + 1 < len(ext) else 0
        if cap.id in spec.hidden_ext:
            header = (following << 20) | ((0 if i == 0 else cap.version) << 16)
            _put(buf, cap.offset, "I", header)
            continue
        _put(buf, cap.offset, "I", (following << 20) | (cap.version << 16) | cap.id)
        buf[cap.offset + 4 : cap.offset + 4 + len(cap.body)] = cap.body
    for cap in spec.stray:
        _put(buf, cap.offset, "I", (cap.version << 16) | cap.id)
        buf[cap.offset + 4 : cap.offset + 4 + len(cap.body)] = cap.body
    return bytes(buf)


# -- capability bodies (the bytes after the 2-byte header, or after the 4-byte extended header) ----


def pm(d3cold: bool = False) -> bytes:
    pmc = 0x0003 | (0x8000 if d3cold else 0)  # version 3; PME from D3cold only when asked
    return struct.pack("<HHH", pmc, 0x0008, 0)  # PMCSR: D0, No_Soft_Reset


def msi(vectors_log2: int = 4, bits64: bool = True, maskable: bool = True, enabled: bool = False) -> bytes:
    control = (vectors_log2 << 1) | (0x80 if bits64 else 0) | (0x100 if maskable else 0) | (1 if enabled else 0)
    return struct.pack("<H", control) + bytes(20 if bits64 and maskable else 12)


def msix(table_size: int, bar: int = 0, table: int = 0xB90000, pba: int = 0xBA0000, enabled: bool = True) -> bytes:
    control = (table_size - 1) | (0x8000 if enabled else 0)
    return struct.pack("<HII", control, table | bar, pba | bar)


def subsystem_cap(vendor: int, device: int) -> bytes:
    return struct.pack("<HHH", 0, vendor, device)


def vendor_cap(length: int = 0x14) -> bytes:
    return bytes([length]) + bytes(length - 3)


@dataclass(frozen=True)
class Express:
    """Fields of the PCI Express capability (what lspci prints as DevCap/DevCtl/LnkCap/LnkSta...)."""

    port_type: int
    max_payload_supported: int = 256
    max_payload: int = 256
    max_read_request: int = 512
    extended_tags_supported: bool = True
    extended_tags: bool = True
    relaxed_ordering: bool = True
    no_snoop: bool = True
    flr: bool = False
    link_speed: int = 5
    """Generation the link can reach (LnkCap)."""
    link_width: int = 16
    current_speed: int | None = None
    current_width: int | None = None
    port_number: int = 0
    aspm_support: int = 0x2
    """LnkCap bits 11:10: 1 L0s, 2 L1, 3 both."""
    aspm_enabled: int = 0
    slot: int | None = None
    """Slot number: root and downstream ports with a slot."""
    slot_power_w: int = 75
    ten_bit_tags: bool = True
    ltr: bool = True
    ari_forwarding: bool = False
    dl_active: bool = True

    def body(self) -> bytes:
        slot_implemented = self.slot is not None and self.port_type in (PORT_ROOT, PORT_DOWNSTREAM)
        caps = 0x2 | (self.port_type << 4) | (0x100 if slot_implemented else 0)
        devcap = PAYLOAD_CODES[self.max_payload_supported] | (0x20 if self.extended_tags_supported else 0)
        if self.port_type in (PORT_ENDPOINT, PORT_LEGACY, PORT_RCIEP):
            devcap |= 0x1 << 9  # acceptable latency: L0s <64ns, L1 <2us
            devcap |= (1 << 28) if self.flr else 0
            devcap |= (self.slot_power_w & 0xFF) << 18
        devcap |= 1 << 15  # role-based error reporting
        devctl = 0x0004 | PAYLOAD_CODES[self.max_payload] << 5 | PAYLOAD_CODES[self.max_read_request] << 12
        devctl |= (0x10 if self.relaxed_ordering else 0) | (0x100 if self.extended_tags else 0) | (0x800 if self.no_snoop else 0)
        if self.port_type in (PORT_ROOT, PORT_UPSTREAM, PORT_DOWNSTREAM):
            devctl |= 0x000F  # bridges report every error class
        lnkcap = self.link_speed | (self.link_width << 4) | (self.aspm_support << 10) | (0x4 << 15) | (self.port_number << 24)
        if self.port_type in (PORT_ROOT, PORT_DOWNSTREAM):
            lnkcap |= (1 << 19) | (1 << 20) | (1 << 21)  # surprise down, DLL link active, bandwidth notification
        lnkcap |= 1 << 22  # ASPM optionality compliance
        lnkctl = self.aspm_enabled
        speed = self.current_speed or self.link_speed
        width = self.current_width if self.current_width is not None else self.link_width
        lnksta = speed | (width << 4) | 0x1000  # slot clock configuration
        if self.dl_active and self.port_type in (PORT_ROOT, PORT_DOWNSTREAM):
            lnksta |= 0x2000
        sltcap = sltctl = sltsta = 0
        if slot_implemented:
            assert self.slot is not None
            sltcap = (self.slot << 19) | ((self.slot_power_w & 0xFF) << 7)
            sltsta = 0x0040  # presence detect
        rootctl = rootcap = rootsta = 0
        devcap2 = 0x1F | (0x800 if self.ltr else 0) | (0x30000 if self.ten_bit_tags else 0) | (0x1 << 18)
        if self.port_type in (PORT_ROOT, PORT_DOWNSTREAM):
            devcap2 |= 0x20  # ARI forwarding supported
        devctl2 = (0x1000 if self.ten_bit_tags and self.port_type == PORT_ENDPOINT else 0) | (0x20 if self.ari_forwarding else 0)
        lnkcap2 = sum(1 << g for g in range(1, self.link_speed + 1))
        lnkctl2 = self.link_speed
        lnksta2 = 0x001E if self.link_speed >= 3 else 0  # equalization complete, phases 1-3
        body = struct.pack(
            "<HIHHIHHIHHHHIIHHIHHIHH",
            caps,
            devcap,
            devctl,
            0,
            lnkcap,
            lnkctl,
            lnksta,
            sltcap,
            sltctl,
            sltsta,
            rootctl,
            rootcap,
            rootsta,
            devcap2,
            devctl2,
            0,
            lnkcap2,
            lnkctl2,
            lnksta2,
            0,
            0,
            0,
        )
        return body


def aer(root_port: bool = False, ue_status: int = 0, ce_status: int = 0) -> bytes:
    body = struct.pack(
        "<IIIIII",
        ue_status,
        0x00180000 if not root_port else 0,  # UEMsk: ECRC and UnsupReq masked on endpoints, as firmware commonly leaves them
        0x00062030,  # UESvrt: the PCIe default severities (DLP SDES FCP RxOF MalfTLP)
        ce_status,
        0x00002000,  # CEMsk: AdvNonFatalErr masked
        0x000000A0,  # AERCap: ECRC generation/check capable
    )
    body += bytes(16)  # header log
    if root_port:
        body += struct.pack("<III", 0x7, 0, 0)  # root error command: report all; status; source ids
    body += bytes(16 if root_port else 4)
    return body


def acs(capability: int, control: int) -> bytes:
    return struct.pack("<HH", capability, control)


ACS_SV, ACS_TB, ACS_RR, ACS_CR, ACS_UF, ACS_EC, ACS_DT = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40
ACS_KERNEL_ENABLES = ACS_SV | ACS_RR | ACS_CR | ACS_UF
"""What Linux's pci_std_enable_acs() sets (where supported) once an IOMMU driver asked for ACS."""


def rebar(bar_index: int, current: int, largest: int, smallest: int = 1 << 20) -> bytes:
    """One resizable BAR: sizes from ``smallest`` to ``largest`` bytes supported, ``current`` programmed."""

    def code(size: int) -> int:
        return size.bit_length() - 1 - 20

    sizes = 0
    for n in range(code(smallest), code(largest) + 1):
        sizes |= 1 << (n + 4)
    control = bar_index | (1 << 5) | (code(current) << 8)
    return struct.pack("<II", sizes & 0xFFFFFFFF, control)


def ltr(snoop: int = 0x1003, no_snoop: int = 0x1003) -> bytes:
    return struct.pack("<HH", snoop, no_snoop)


def dsn(serial: int) -> bytes:
    return struct.pack("<Q", serial)


def ari(next_function: int = 0) -> bytes:
    return struct.pack("<HH", next_function << 8, 0)


def sriov(total_vfs: int, vf_device: int) -> bytes:
    body = struct.pack("<IHHHHHHHHHH", 0x2, 0, 0, 0, total_vfs, 0, 0, 0, 4, 1, 0)
    body += struct.pack("<H", vf_device)
    return body + bytes(0x3C - len(body))


def zeros(length: int) -> bytes:
    return bytes(length)
