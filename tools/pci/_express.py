"""The PCI Express capability (id 0x10): device and link capability, control and status."""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.pci._bytes import u16, u32

EXPRESS_CAP_ID = 0x10
DEVCAP = 0x04
DEVCTL = 0x08
LNKCAP = 0x0C
LNKSTA = 0x12

PORT_TYPES: dict[int, str] = {
    0x0: "endpoint",
    0x1: "legacy endpoint",
    0x4: "root port",
    0x5: "switch upstream port",
    0x6: "switch downstream port",
    0x7: "pcie-to-pci bridge",
    0x8: "pci-to-pcie bridge",
    0x9: "root complex integrated endpoint",
    0xA: "root complex event collector",
}
SPEEDS_GTS: dict[int, float] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
"""Link speed field (LnkCap/LnkSta bits 3:0) to GT/s; the generation is the field value."""


def payload_bytes(code: int) -> int:
    """Encoded MaxPayload/MaxReadReq size (0=128 ... 5=4096) to bytes."""
    return 128 << code


def payload_code(size: int) -> int:
    """Bytes (128 ... 4096) to the 3-bit encoding; ValueError for anything else."""
    for code in range(6):
        if payload_bytes(code) == size:
            return code
    raise ValueError(f"{size} is not a PCIe payload size (128..4096, a power of two)")


class ExpressCap(Record):
    """Decoded fields of the PCI Express capability; ``None`` where the bytes were not there."""

    offset: int
    version: int
    port_type: int
    max_payload_supported: int | None
    """DevCap bits 2:0, bytes."""
    max_payload: int | None
    """DevCtl bits 7:5, bytes."""
    max_read_request: int | None
    """DevCtl bits 14:12, bytes."""
    extended_tags: bool | None
    """DevCtl bit 8: 8-bit tags (256 outstanding reads instead of 32)."""
    relaxed_ordering: bool | None
    """DevCtl bit 4."""
    link_max_gen: int | None
    link_max_width: int | None
    link_gen: int | None
    link_width: int | None

    @property
    def port_type_name(self) -> str:
        return PORT_TYPES.get(self.port_type, f"type {self.port_type:#x}")

    @property
    def is_switch_port(self) -> bool:
        return self.port_type in (0x5, 0x6)

    @property
    def link_max_speed_gts(self) -> float | None:
        return SPEEDS_GTS.get(self.link_max_gen) if self.link_max_gen is not None else None

    @property
    def link_speed_gts(self) -> float | None:
        return SPEEDS_GTS.get(self.link_gen) if self.link_gen is not None else None


def _nonzero(value: int) -> int | None:
    return value or None


def parse_express(data: bytes, offset: int) -> ExpressCap:
    caps = u16(data, offset + 2) or 0
    devcap = u32(data, offset + DEVCAP)
    devctl = u16(data, offset + DEVCTL)
    lnkcap = u32(data, offset + LNKCAP)
    lnksta = u16(data, offset + LNKSTA)
    return ExpressCap(
        offset=offset,
        version=caps & 0xF,
        port_type=(caps >> 4) & 0xF,
        max_payload_supported=payload_bytes(devcap & 0x7) if devcap is not None else None,
        max_payload=payload_bytes((devctl >> 5) & 0x7) if devctl is not None else None,
        max_read_request=payload_bytes((devctl >> 12) & 0x7) if devctl is not None else None,
        extended_tags=bool(devctl & 0x100) if devctl is not None else None,
        relaxed_ordering=bool(devctl & 0x10) if devctl is not None else None,
        link_max_gen=_nonzero(lnkcap & 0xF) if lnkcap is not None else None,
        link_max_width=(lnkcap >> 4) & 0x3F if lnkcap is not None else None,
        link_gen=_nonzero(lnksta & 0xF) if lnksta is not None else None,
        link_width=(lnksta >> 4) & 0x3F if lnksta is not None else None,
    )
