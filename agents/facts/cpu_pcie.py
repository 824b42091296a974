"""The PCIe generation a server CPU's root ports top out at, by its vendor, family and model (``/proc/cpuinfo``).

A GPU whose link runs at the slot's maximum below its own is capped by something: a BIOS speed setting or a riser
(a setting or a part to change), or the CPU itself (nothing to set: Ice Lake-SP's ports are PCIe 4.0). Only CPUs
whose root ports are documented are listed; any other is not known, and a capped link keeps the setting's fix.
"""

from __future__ import annotations

from rigaudit.tools.core.record import Record

ROOT_PORT_GEN: dict[tuple[str, int, int], tuple[int, str]] = {
    ("GenuineIntel", 6, 85): (3, "Xeon Scalable (Skylake-SP, Cascade Lake)"),
    ("GenuineIntel", 6, 106): (4, "Xeon Scalable 3rd gen (Ice Lake-SP)"),
    ("GenuineIntel", 6, 108): (4, "Xeon D (Ice Lake-D)"),
    ("GenuineIntel", 6, 143): (5, "Xeon Scalable 4th gen (Sapphire Rapids)"),
    ("GenuineIntel", 6, 207): (5, "Xeon Scalable 5th gen (Emerald Rapids)"),
    ("GenuineIntel", 6, 173): (5, "Xeon 6 (Granite Rapids)"),
    ("AuthenticAMD", 23, 1): (3, "EPYC 7001 (Naples)"),
    ("AuthenticAMD", 23, 49): (4, "EPYC 7002 (Rome)"),
    ("AuthenticAMD", 25, 1): (4, "EPYC 7003 (Milan)"),
    ("AuthenticAMD", 25, 17): (5, "EPYC 9004 (Genoa)"),
    ("AuthenticAMD", 25, 160): (5, "EPYC 97x4 (Bergamo)"),
    ("AuthenticAMD", 26, 2): (5, "EPYC 9005 (Turin)"),
}
"""Intel's and AMD's product briefs: the PCIe generation of each server CPU family's lanes."""


class CpuPcie(Record):
    gen: int
    cpu: str


def cpu_identity(cpuinfo: str | None) -> tuple[str | None, int | None, int | None]:
    """(vendor_id, cpu family, model) of the first CPU in ``/proc/cpuinfo``."""
    if cpuinfo is None:
        return None, None, None
    first = cpuinfo.split("\n\n", 1)[0]
    fields = dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in first.splitlines()))
    return fields.get("vendor_id"), _int(fields.get("cpu family")), _int(fields.get("model"))


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def root_port_gen(cpuinfo: str | None) -> CpuPcie | None:
    """The PCIe generation of this CPU's root ports, where its model is listed."""
    vendor, family, model = cpu_identity(cpuinfo)
    if vendor is None or family is None or model is None:
        return None
    found = ROOT_PORT_GEN.get((vendor, family, model))
    return CpuPcie(gen=found[0], cpu=found[1]) if found else None
