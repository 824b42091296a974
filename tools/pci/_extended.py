"""Extended capabilities (from offset 0x100): AER, ACS and Resizable BAR."""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.pci._bytes import u16, u32

EXTENDED_START = 0x100
CONFIG_SIZE = 4096
AER_ID = 0x0001
ACS_ID = 0x000D
REBAR_ID = 0x0015
ACS_CTRL = 0x06
_MAX_EXT = (CONFIG_SIZE - EXTENDED_START) // 4


class ExtendedCap(Record):
    id: int
    version: int
    offset: int


class AcsFlags(Record):
    """The seven ACS bits, as in the capability (what it can do) or control (what is on) register."""

    raw: int

    @property
    def source_validation(self) -> bool:
        return bool(self.raw & 0x01)

    @property
    def translation_blocking(self) -> bool:
        return bool(self.raw & 0x02)

    @property
    def request_redirect(self) -> bool:
        return bool(self.raw & 0x04)

    @property
    def completion_redirect(self) -> bool:
        return bool(self.raw & 0x08)

    @property
    def upstream_forwarding(self) -> bool:
        return bool(self.raw & 0x10)

    @property
    def egress_control(self) -> bool:
        return bool(self.raw & 0x20)

    @property
    def direct_translated(self) -> bool:
        return bool(self.raw & 0x40)

    @property
    def names(self) -> tuple[str, ...]:
        """lspci's names of the set bits: SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd EgressCtrl DirectTrans."""
        labels = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
        return tuple(label for bit, label in enumerate(labels) if self.raw & (1 << bit))


class AcsCap(Record):
    offset: int
    capability: AcsFlags
    control: AcsFlags

    @property
    def redirects(self) -> bool:
        """P2P Request or Completion Redirect is on: peer traffic detours upstream."""
        return self.control.request_redirect or self.control.completion_redirect


class AerCap(Record):
    offset: int
    uncorrectable_status: int
    correctable_status: int


class ResizableBar(Record):
    """One resizable BAR: its index, its current size and the sizes it supports (bytes)."""

    bar: int
    current_size: int
    supported_sizes: tuple[int, ...]

    @property
    def largest_supported(self) -> int | None:
        return max(self.supported_sizes) if self.supported_sizes else None


class ResizableBarCap(Record):
    offset: int
    bars: tuple[ResizableBar, ...]

    def bar(self, index: int) -> ResizableBar | None:
        return next((b for b in self.bars if b.bar == index), None)


def walk_extended(data: bytes) -> tuple[tuple[ExtendedCap, ...], tuple[str, ...]]:
    """Follow the extended capability list from 0x100 (caller checks the data reaches that far)."""
    caps: list[ExtendedCap] = []
    warnings: list[str] = []
    seen: set[int] = set()
    offset = EXTENDED_START
    while offset:
        if offset < EXTENDED_START or offset in seen or len(caps) >= _MAX_EXT:
            warnings.append(f"extended capability list loops or leaves the extended space at 0x{offset:03x}; list ends")
            break
        seen.add(offset)
        header = u32(data, offset)
        if header is None:
            warnings.append(f"extended capability at 0x{offset:03x} lies past the {len(data)} bytes read")
            break
        if header in (0, 0xFFFFFFFF):
            break
        caps.append(ExtendedCap(header & 0xFFFF, (header >> 16) & 0xF, offset))
        offset = (header >> 20) & 0xFFC
    return tuple(caps), tuple(warnings)


def parse_acs(data: bytes, offset: int) -> AcsCap | None:
    cap, ctl = u16(data, offset + 4), u16(data, offset + ACS_CTRL)
    if cap is None or ctl is None:
        return None
    return AcsCap(offset, AcsFlags(cap), AcsFlags(ctl))


def parse_aer(data: bytes, offset: int) -> AerCap | None:
    uncorrectable, correctable = u32(data, offset + 4), u32(data, offset + 0x10)
    if uncorrectable is None or correctable is None:
        return None
    return AerCap(offset, uncorrectable, correctable)


def parse_rebar(data: bytes, offset: int) -> ResizableBarCap | None:
    """Each BAR has a capability dword (+4+8i: sizes, bit n = 2^(n+16) bytes) and a control dword
    (+8+8i: bits 2:0 BAR index, 7:5 number of BARs (first only), 13:8 current size, 2^(n+20) bytes)."""
    first = u32(data, offset + 8)
    if first is None:
        return None
    count = max(1, min(6, (first >> 5) & 0x7))
    bars: list[ResizableBar] = []
    for i in range(count):
        cap, ctl = u32(data, offset + 4 + 8 * i), u32(data, offset + 8 + 8 * i)
        if cap is None or ctl is None:
            break
        sizes = tuple(1 << (bit + 16) for bit in range(4, 32) if cap & (1 << bit))
        bars.append(ResizableBar(ctl & 0x7, 1 << (((ctl >> 8) & 0x3F) + 20), sizes))
    return ResizableBarCap(offset, tuple(bars))
