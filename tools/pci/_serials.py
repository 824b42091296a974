"""Serial numbers inside binary files: the PCIe Device Serial Number capability and VPD ``SN``.

Everything else in PCI configuration space is left byte for byte, so the audit of a bundle (which zeroes
them) or of a transcript's rebuilt snapshot (where they are zeroed too) decodes the same links, payload
sizes, ACS and ReBAR as the audit of the original.
"""

from __future__ import annotations

from rigaudit.tools.pci._config import PciConfigError, parse_config

DSN_ID = 0x0003
"""Extended capability id of the Device Serial Number: a header, then the 8-byte serial."""


def zero_dsn(data: bytes) -> tuple[bytes, bool] | None:
    """``data`` with the Device Serial Number's 8 bytes zeroed, and whether there was one to zero;
    ``None`` when ``data`` is not a configuration space at all."""
    try:
        config = parse_config(data)
    except PciConfigError:
        return None
    cap = config.extended_capability(DSN_ID)
    if cap is None or cap.offset + 12 > len(data) or not any(data[cap.offset + 4 : cap.offset + 12]):
        return data, False
    out = bytearray(data)
    out[cap.offset + 4 : cap.offset + 12] = bytes(8)
    return bytes(out), True


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
