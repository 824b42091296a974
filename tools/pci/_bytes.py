"""Little-endian register reads that never raise: ``None`` past the end of the data."""

from __future__ import annotations


def u8(data: bytes, offset: int) -> int | None:
    return data[offset] if 0 <= offset < len(data) else None


def u16(data: bytes, offset: int) -> int | None:
    if offset < 0 or offset + 2 > len(data):
        return None
    return int.from_bytes(data[offset : offset + 2], "little")


def u32(data: bytes, offset: int) -> int | None:
    if offset < 0 or offset + 4 > len(data):
        return None
    return int.from_bytes(data[offset : offset + 4], "little")
