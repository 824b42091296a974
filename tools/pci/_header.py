"""The standard configuration header (the first 64 bytes) and its capability list."""

from __future__ import annotations

from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.pci._bytes import u8, u32

HEADER_SIZE = 64
STATUS_CAP_LIST = 0x10
_MAX_CAPS = 48  # (256 - 64) / 4: more entries than that can only be a loop

BarKind = Literal["io", "mem32", "mem64"]


class Bar(Record):
    """A Base Address Register as programmed (its size needs a write to probe: not read here)."""

    index: int
    kind: BarKind
    prefetchable: bool
    address: int


class Capability(Record):
    """One entry of the standard capability list (``id`` as in pci_regs.h, e.g. 0x10 = PCI Express)."""

    id: int
    offset: int


def parse_bars(data: bytes, header_type: int) -> tuple[Bar, ...]:
    """BARs of a type 0 (six) or type 1 (two) header; 64-bit BARs take two slots."""
    count = {0: 6, 1: 2}.get(header_type, 0)
    bars: list[Bar] = []
    index = 0
    while index < count:
        raw = u32(data, 0x10 + 4 * index)
        if raw is None:
            break
        if raw & 0x1:
            bars.append(Bar(index, "io", False, raw & ~0x3 & 0xFFFFFFFF))
            index += 1
            continue
        prefetchable = bool(raw & 0x8)
        if (raw >> 1) & 0x3 == 0x2:
            high = u32(data, 0x10 + 4 * (index + 1)) if index + 1 < count else 0
            bars.append(Bar(index, "mem64", prefetchable, ((high or 0) << 32) | (raw & ~0xF & 0xFFFFFFFF)))
            index += 2
            continue
        bars.append(Bar(index, "mem32", prefetchable, raw & ~0xF & 0xFFFFFFFF))
        index += 1
    return tuple(bars)


def walk_capabilities(data: bytes, header_type: int, status: int) -> tuple[tuple[Capability, ...], bool, tuple[str, ...]]:
    """Follow the capability list. Returns (capabilities, complete, warnings).

    ``complete`` is False when a pointer leads past the bytes we have (a 64-byte read by an
    unprivileged user): absent capabilities are then unknown, not missing.
    """
    if not status & STATUS_CAP_LIST:
        return (), True, ()
    pointer_at = 0x14 if header_type == 2 else 0x34
    pointer = u8(data, pointer_at)
    if pointer is None:
        return (), False, ()
    caps: list[Capability] = []
    seen: set[int] = set()
    warnings: list[str] = []
    pointer &= 0xFC
    while pointer:
        if pointer < HEADER_SIZE:
            warnings.append(f"capability pointer 0x{pointer:02x} points into the header; list ends")
            break
        if pointer in seen or len(caps) >= _MAX_CAPS:
            warnings.append(f"capability list loops at 0x{pointer:02x}; list ends")
            break
        seen.add(pointer)
        cap_id = u8(data, pointer)
        following = u8(data, pointer + 1)
        if cap_id is None or following is None:
            return tuple(caps), False, tuple(warnings)
        caps.append(Capability(cap_id, pointer))
        pointer = following & 0xFC
    return tuple(caps), True, tuple(warnings)
