"""A device's whole configuration space, decoded: ``parse_config(bytes) -> PciConfig``."""

from __future__ import annotations

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.pci._bytes import u8, u16
from rigaudit.tools.pci._express import EXPRESS_CAP_ID, ExpressCap, parse_express
from rigaudit.tools.pci._extended import (
    ACS_ID,
    AER_ID,
    EXTENDED_START,
    REBAR_ID,
    AcsCap,
    AerCap,
    ExtendedCap,
    ResizableBarCap,
    parse_acs,
    parse_aer,
    parse_rebar,
    walk_extended,
)
from rigaudit.tools.pci._header import HEADER_SIZE, Bar, Capability, parse_bars, walk_capabilities


class PciConfigError(OperationError):
    """The bytes are not a configuration space (too short, or all ones: the device is gone)."""


class PciConfig(Record):
    """Decoded configuration space.

    ``capabilities_complete`` / ``extended_known`` say whether absence means absent: an
    unprivileged read of sysfs ``config`` returns 64 bytes, so a missing capability is unknown.
    """

    size: int
    vendor_id: int
    device_id: int
    command: int
    status: int
    revision: int
    class_code: int
    """24 bits: base class, subclass, programming interface (0x030200 = 3D controller)."""
    header_type: int
    """0 endpoint, 1 PCI-PCI bridge, 2 CardBus bridge (the multi-function bit stripped)."""
    multifunction: bool
    bars: tuple[Bar, ...]
    capabilities: tuple[Capability, ...]
    capabilities_complete: bool
    express: ExpressCap | None
    extended_known: bool
    extended: tuple[ExtendedCap, ...]
    aer: AerCap | None
    acs: AcsCap | None
    rebar: ResizableBarCap | None
    warnings: tuple[str, ...] = ()

    @property
    def is_bridge(self) -> bool:
        return self.header_type == 1

    @property
    def express_known(self) -> bool:
        """True when ``express is None`` really means "no PCI Express capability"."""
        return self.express is not None or self.capabilities_complete

    def capability(self, cap_id: int) -> Capability | None:
        return next((c for c in self.capabilities if c.id == cap_id), None)

    def extended_capability(self, cap_id: int) -> ExtendedCap | None:
        return next((c for c in self.extended if c.id == cap_id), None)


def parse_config(data: bytes) -> PciConfig:
    """Decode ``data`` (64, 256 or 4096 bytes as sysfs returns them). Raises :class:`PciConfigError`."""
    if len(data) < HEADER_SIZE:
        raise PciConfigError(f"{len(data)} bytes of configuration space; the header alone is {HEADER_SIZE}")
    vendor = u16(data, 0)
    if vendor in (0xFFFF, None):
        raise PciConfigError("vendor id 0xffff: the device does not answer (removed, or fallen off the bus)")
    assert vendor is not None
    status = u16(data, 0x06) or 0
    raw_type = u8(data, 0x0E) or 0
    header_type = raw_type & 0x7F
    caps, complete, warnings = walk_capabilities(data, header_type, status)
    express_cap = next((c for c in caps if c.id == EXPRESS_CAP_ID), None)
    express = parse_express(data, express_cap.offset) if express_cap else None
    extended_known = len(data) > EXTENDED_START and (express is not None or complete)
    extended: tuple[ExtendedCap, ...] = ()
    ext_warnings: tuple[str, ...] = ()
    if extended_known and express is not None:
        extended, ext_warnings = walk_extended(data)

    def find(cap_id: int) -> int | None:
        return next((c.offset for c in extended if c.id == cap_id), None)

    aer_at, acs_at, rebar_at = find(AER_ID), find(ACS_ID), find(REBAR_ID)
    return PciConfig(
        size=len(data),
        vendor_id=vendor,
        device_id=u16(data, 2) or 0,
        command=u16(data, 4) or 0,
        status=status,
        revision=data[0x08],
        class_code=int.from_bytes(data[0x09:0x0C], "little"),
        header_type=header_type,
        multifunction=bool(raw_type & 0x80),
        bars=parse_bars(data, header_type),
        capabilities=caps,
        capabilities_complete=complete,
        express=express,
        extended_known=extended_known,
        extended=extended,
        aer=parse_aer(data, aer_at) if aer_at is not None else None,
        acs=parse_acs(data, acs_at) if acs_at is not None else None,
        rebar=parse_rebar(data, rebar_at) if rebar_at is not None else None,
        warnings=warnings + ext_warnings,
    )
