"""Reading PCI devices through a :class:`~tools.probe.Probe`: config space and place in the tree."""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.pci._config import PciConfig, PciConfigError, parse_config
from rigaudit.tools.pci._tree import device_chain

PCI_DEVICES = "/sys/bus/pci/devices"


def config_path(bdf: str) -> str:
    return f"{PCI_DEVICES}/{bdf}/config"


class ConfigRead(Record):
    """One device's decoded config space, or why it could not be had."""

    bdf: str
    config: PciConfig | None
    error: str | None

    @property
    def ref(self) -> str:
        return file_ref(config_path(self.bdf))


class ChainRead(Record):
    """Where a device sits: the BDFs from its root port down to itself (``None``: link unreadable)."""

    bdf: str
    chain: tuple[str, ...] | None
    link_target: str | None

    @property
    def ref(self) -> str:
        return f"link:{PCI_DEVICES}/{self.bdf}"

    @property
    def bridges(self) -> tuple[str, ...]:
        return self.chain[:-1] if self.chain else ()


async def read_config(probe: Probe, bdf: str) -> ConfigRead:
    result = await probe.read(config_path(bdf))
    if result.data is None:
        return ConfigRead(bdf, None, f"{config_path(bdf)} not readable: {result.error}")
    try:
        return ConfigRead(bdf, parse_config(result.data), None)
    except PciConfigError as exc:
        return ConfigRead(bdf, None, f"{config_path(bdf)}: {exc}")


async def read_chain(probe: Probe, bdf: str) -> ChainRead:
    target = await probe.readlink(f"{PCI_DEVICES}/{bdf}")
    if target is None:
        return ChainRead(bdf, None, None)
    chain = device_chain(target)
    return ChainRead(bdf, chain if chain and chain[-1] == bdf.lower() else None, target)


class LinkAttrs(Record):
    """The kernel's view of a device's link: ``{current,max}_link_{speed,width}`` (GT/s, lanes)."""

    bdf: str
    current_speed: float | None
    max_speed: float | None
    current_width: int | None
    max_width: int | None
    refs: tuple[str, ...]

    @property
    def known(self) -> bool:
        return None not in (self.current_speed, self.max_speed, self.current_width, self.max_width)


def parse_speed(text: str | None) -> float | None:
    """``32.0 GT/s PCIe`` -> 32.0; ``Unknown`` or garbage -> None."""
    if text is None:
        return None
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", text)
    return float(match.group(1)) if match else None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


async def read_link(probe: Probe, bdf: str) -> LinkAttrs:
    names = ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width")
    paths = [f"{PCI_DEVICES}/{bdf}/{name}" for name in names]
    cur_s, max_s, cur_w, max_w = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    return LinkAttrs(bdf, parse_speed(cur_s), parse_speed(max_s), _int(cur_w), _int(max_w), tuple(file_ref(p) for p in paths))


class AerCounts(Record):
    """``aer_dev_{correctable,nonfatal,fatal}`` totals (``None``: file absent or unreadable)."""

    bdf: str
    correctable: int | None
    nonfatal: int | None
    fatal: int | None
    nonzero: tuple[str, ...]
    """Named counters that are not zero, e.g. ``correctable:BadTLP=3``."""
    refs: tuple[str, ...]

    @property
    def known(self) -> bool:
        return any(v is not None for v in (self.correctable, self.nonfatal, self.fatal))


def parse_aer_counters(text: str | None) -> tuple[int | None, dict[str, int]]:
    """An ``aer_dev_*`` file: (its ``TOTAL_ERR_*`` line, or the sum of the counters; the non-zero counters)."""
    if text is None:
        return None, {}
    total: int | None = None
    counters: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdecimal():
            continue
        if parts[0].startswith("TOTAL_"):
            total = int(parts[1])
        else:
            counters[parts[0]] = int(parts[1])
    if total is None and counters:
        total = sum(counters.values())
    if total is None and not counters:
        return None, {}
    return total, {name: count for name, count in counters.items() if count}


async def read_aer(probe: Probe, bdf: str) -> AerCounts:
    kinds = ("correctable", "nonfatal", "fatal")
    paths = [f"{PCI_DEVICES}/{bdf}/aer_dev_{kind}" for kind in kinds]
    texts = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    totals: list[int | None] = []
    nonzero: list[str] = []
    for kind, text in zip(kinds, texts, strict=True):
        total, counters = parse_aer_counters(text)
        totals.append(total)
        nonzero.extend(f"{kind}:{name}={count}" for name, count in counters.items())
    return AerCounts(bdf, totals[0], totals[1], totals[2], tuple(nonzero), tuple(file_ref(p) for p in paths))


async def read_driver(probe: Probe, bdf: str) -> str | None:
    """The driver bound to the device (``nvidia``, ``vfio-pci``, ``pcieport``), from the ``driver`` link."""
    target = await probe.readlink(f"{PCI_DEVICES}/{bdf}/driver")
    return target.rstrip("/").rsplit("/", 1)[-1] if target else None
