"""PCI configuration space, decoded without lspci: header, capabilities, PCI Express, AER, ACS,
Resizable BAR; the tree of bridges from sysfs; and register writes for the apply engine."""

from rigaudit.tools.pci._config import PciConfig, PciConfigError, parse_config
from rigaudit.tools.pci._express import EXPRESS_CAP_ID, PORT_TYPES, SPEEDS_GTS, ExpressCap, payload_bytes, payload_code
from rigaudit.tools.pci._extended import (
    ACS_CTRL,
    ACS_ID,
    AER_ID,
    REBAR_ID,
    AcsCap,
    AcsFlags,
    AerCap,
    ExtendedCap,
    ResizableBar,
    ResizableBarCap,
)
from rigaudit.tools.pci._header import Bar, Capability
from rigaudit.tools.pci._registers import PciRegisterError, RegisterWrite, apply_masked, register_offset, register_write
from rigaudit.tools.pci._serials import DSN_ID, dsn_serials, mask_vpd, zero_dsn
from rigaudit.tools.pci._tree import bridges_above, bridges_between, common_upstream, device_chain, is_bdf, root_complex

__all__ = [
    "ACS_CTRL",
    "ACS_ID",
    "AER_ID",
    "DSN_ID",
    "EXPRESS_CAP_ID",
    "PORT_TYPES",
    "REBAR_ID",
    "SPEEDS_GTS",
    "AcsCap",
    "AcsFlags",
    "AerCap",
    "Bar",
    "Capability",
    "ExpressCap",
    "ExtendedCap",
    "PciConfig",
    "PciConfigError",
    "PciRegisterError",
    "RegisterWrite",
    "ResizableBar",
    "ResizableBarCap",
    "apply_masked",
    "bridges_above",
    "bridges_between",
    "common_upstream",
    "device_chain",
    "dsn_serials",
    "is_bdf",
    "mask_vpd",
    "parse_config",
    "payload_bytes",
    "payload_code",
    "register_offset",
    "register_write",
    "root_complex",
    "zero_dsn",
]
