"""Register writes computed from a config image, shared by the audit (fixes) and apply (the write).

A :class:`~tools.schema.finding.PciRegisterAction` names ``capability`` ("header", "exp",
"ecap:0x000d"), ``offset`` within it, ``width``, ``value`` and ``mask``; these helpers turn that
into the absolute offset and the bytes to write, preserving the bits outside the mask.
"""

from __future__ import annotations

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.pci._bytes import u8, u16, u32
from rigaudit.tools.pci._config import PciConfigError, parse_config


class PciRegisterError(OperationError):
    """The register cannot be located or written (capability absent, config too short...)."""


class RegisterWrite(Record):
    absolute_offset: int
    width: int
    old: int
    new: int

    @property
    def data(self) -> bytes:
        """The new register value, little endian, ``width`` bytes: what to write at ``absolute_offset``."""
        return self.new.to_bytes(self.width, "little")

    @property
    def changes(self) -> bool:
        return self.old != self.new


def apply_masked(old: int, value: int, mask: int) -> int:
    """``old`` with the bits of ``mask`` replaced by those of ``value`` (setpci's ``value:mask``)."""
    return (old & ~mask) | (value & mask)


def _ecap_id(capability: str) -> int | None:
    try:
        return int(capability.split(":", 1)[1], 0)
    except ValueError:
        return None


def register_offset(config: bytes, capability: str, offset: int) -> int | None:
    """Absolute offset of ``offset`` within ``capability`` in this config image, or ``None``
    when the capability is absent or lies beyond the bytes given."""
    if offset < 0:
        return None
    if capability == "header":
        return offset if offset < len(config) else None
    try:
        parsed = parse_config(config)
    except PciConfigError:
        return None
    if capability == "exp":
        base = parsed.express.offset if parsed.express is not None else None
    elif capability.startswith("ecap:"):
        cap_id = _ecap_id(capability)
        found = parsed.extended_capability(cap_id) if cap_id is not None else None
        base = found.offset if found is not None else None
    else:
        return None
    if base is None or base + offset >= len(config):
        return None
    return base + offset


def _read(config: bytes, offset: int, width: int) -> int | None:
    reader = {1: u8, 2: u16, 4: u32}.get(width)
    return reader(config, offset) if reader is not None else None


def register_write(config: bytes, capability: str, offset: int, width: int, value: int, mask: int) -> RegisterWrite:
    """The write that sets ``value`` under ``mask``; raises :class:`PciRegisterError` with one clear line."""
    if width not in (1, 2, 4):
        raise PciRegisterError(f"width {width}: must be 1, 2 or 4 bytes")
    if offset % width:
        raise PciRegisterError(f"offset {offset:#x} is not aligned to its width {width}")
    absolute = register_offset(config, capability, offset)
    if absolute is None:
        raise PciRegisterError(f"{capability}+{offset:#x}: capability not present in the {len(config)} bytes of config read")
    old = _read(config, absolute, width)
    if old is None:
        raise PciRegisterError(f"{capability}+{offset:#x}: register lies past the {len(config)} bytes of config read")
    limit = (1 << (8 * width)) - 1
    return RegisterWrite(absolute, width, old, apply_masked(old, value & limit, mask & limit))
