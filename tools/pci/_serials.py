"""Serial numbers inside binary files: the PCIe Device Serial Number capability and VPD ``SN``.

Everything else in PCI configuration space is left byte for byte, so the audit of a bundle (which zeroes
them) or of a transcript's rebuilt snapshot (where they are zeroed too) decodes the same links, payload
sizes, ACS and ReBAR as the audit of the original.
"""

from __future__ import annotations

from rigaudit.tools.pci._config import PciConfigError, parse_config
from rigaudit.tools.pci._extended import EXTENDED_START, walk_extended

DSN_ID = 0x0003
"""Extended capability id of the Device Serial Number: a header, then the 8-byte serial."""


def zero_dsn(data: bytes) -> tuple[bytes, bool] | None:
    """``data`` with every Device Serial Number's 8 bytes zeroed, and whether there was one to zero; ``None`` when
    ``data`` is not a configuration space at all.

    The extended capability list is walked whatever the rest says (a crafted or damaged space may list a serial
    number twice, or hold one behind a capability list the audit does not follow: no Express capability)."""
    try:
        parse_config(data)
    except PciConfigError:
        return None
    if len(data) <= EXTENDED_START:
        return data, False
    out = bytearray(data)
    for cap in walk_extended(data)[0]:
        if cap.id == DSN_ID and cap.offset + 12 <= len(data):
            out[cap.offset + 4 : cap.offset + 12] = bytes(8)
    zeroed = bytes(out)
    return (zeroed, True) if zeroed != data else (data, False)


def dsn_serials(data: bytes) -> tuple[bytes, ...]:
    """The 8 bytes of each Device Serial Number a configuration space holds (as stored: low dword first)."""
    if len(data) <= EXTENDED_START:
        return ()
    found = (data[c.offset + 4 : c.offset + 12] for c in walk_extended(data)[0] if c.id == DSN_ID)
    return tuple(b for b in found if len(b) == 8 and any(b))


def mask_vpd(data: bytes) -> tuple[bytes, int]:
    """``data`` (sysfs ``vpd``) with each ``SN`` keyword's value written as zeros (checksum kept right)."""
    out = bytearray(data)
    masked = 0
    checksum_at: int | None = None
    i = 0
    while i < len(data):
        tag = data[i]
        if not tag & 0x80:  # small resource: the end tag stops the walk
            if (tag >> 3) & 0xF == 0xF:
                break
            i += 1 + (tag & 0x7)
            continue
        if i + 3 > len(data):
            break
        start, end = i + 3, min(len(data), i + 3 + (data[i + 1] | data[i + 2] << 8))
        if tag in (0x90, 0x91):  # VPD-R, VPD-W: keyword (2), length (1), value
            j = start
            while j + 3 <= end:
                keyword, size = bytes(data[j : j + 2]), data[j + 2]
                if keyword == b"SN" and size:
                    out[j + 3 : j + 3 + size] = b"0" * len(out[j + 3 : j + 3 + size])
                    masked += 1
                elif keyword == b"RV" and size and tag == 0x90:
                    checksum_at = j + 3
                j += 3 + size
        i = end
    if masked and checksum_at is not None and checksum_at < len(out):
        out[checksum_at] = -sum(out[:checksum_at]) & 0xFF
    return bytes(out), masked
