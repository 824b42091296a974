"""PCI configuration space compared as decoded fields (link, payload, ACS, AER, ReBAR), where it decodes."""

from __future__ import annotations

from rigaudit.tools.diffing._text import bytes_detail
from rigaudit.tools.pci import PciConfig, PciConfigError, parse_config


def _size(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def config_fields(config: PciConfig) -> dict[str, str]:
    """The fields a person compares between two hosts or before and after a change."""
    fields = {
        "id": f"{config.vendor_id:04x}:{config.device_id:04x} rev {config.revision:02x}",
        "command": f"{config.command:#06x}",
        "status": f"{config.status:#06x}",
    }
    express = config.express
    if express is not None:
        fields["link"] = f"Gen{express.link_gen} x{express.link_width}"
        fields["link capable"] = f"Gen{express.link_max_gen} x{express.link_max_width}"
        fields["MaxPayload"] = str(express.max_payload)
        fields["MaxReadReq"] = str(express.max_read_request)
        fields["ExtTag"] = str(express.extended_tags)
        fields["RlxdOrd"] = str(express.relaxed_ordering)
    if config.acs is not None:
        fields["ACS control"] = " ".join(config.acs.control.names) or "none"
    if config.aer is not None:
        fields["AER uncorrectable"] = f"{config.aer.uncorrectable_status:#010x}"
        fields["AER correctable"] = f"{config.aer.correctable_status:#010x}"
    if config.rebar is not None:
        for bar in config.rebar.bars:
            fields[f"BAR{bar.bar} size"] = _size(bar.current_size)
    return fields


def config_detail(a: bytes, b: bytes) -> str:
    """``link Gen5 x16 -> Gen4 x16; MaxReadReq 512 -> 4096``, or ``N bytes differ`` when no decoded field moved."""
    try:
        before, after = config_fields(parse_config(a)), config_fields(parse_config(b))
    except PciConfigError:
        return bytes_detail(a, b)
    parts = [f"{k} {before.get(k, '-')} -> {after.get(k, '-')}" for k in {**before, **after} if before.get(k) != after.get(k)]
    return "; ".join(parts) if parts else bytes_detail(a, b)
