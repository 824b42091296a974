"""The limit of the link between two GPUs: NVLink (active links x per-link rate) or PCIe (generation x width).

Figures are per direction: PCIe Gen5 x16 = 63 GB/s; NVLink4 (H100/H200) = 25 GB/s per link, 18 links
= 450 GB/s. NVML is read directly (``pynvml``) in the benchmark's own process; GPUs are matched by
PCI bus id, so CUDA's device order and CUDA_VISIBLE_DEVICES do not matter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Literal

from rigaudit.tools.core.record import Record, field

PCIE_GBPS_PER_LANE: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
"""GB/s per lane per direction after line encoding (8b/10b, 128b/130b, FLIT)."""

NVLINK_GBPS_PER_LINK: dict[int, float] = {6: 20.0, 7: 25.0, 8: 25.0, 9: 25.0, 10: 50.0}
"""GB/s per link per direction by CUDA compute capability major: Pascal NVLink1 20, Volta to Hopper 25, Blackwell 50."""

RemoteKind = Literal["gpu", "switch", "unknown"]


class NvLink(Record):
    remote_bus_id: str | None
    remote_kind: RemoteKind


class GpuLinks(Record):
    """What NVML says about one GPU's links."""

    pci_bus_id: str | None
    compute_major: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    nvlinks: list[NvLink] = field(default_factory=list)
    """Active NVLinks only."""
    error: str | None = None


class LinkLimit(Record):
    kind: Literal["nvlink", "pcie", "unknown"]
    limit_gbps: float | None
    detail: str


def norm_bus_id(bus_id: str | bytes | None) -> str | None:
    """``00000000:1B:00.0`` / ``0000:1b:00.0`` → ``0000:1b:00.0``; None when unparseable."""
    if bus_id is None:
        return None
    text = bus_id.decode(errors="replace") if isinstance(bus_id, bytes) else bus_id
    parts = text.strip().lower().split(":")
    try:
        if len(parts) == 3:
            device, _, function = parts[2].partition(".")
            return f"{int(parts[0], 16):04x}:{int(parts[1], 16):02x}:{int(device, 16):02x}.{int(function or '0', 16)}"
        if len(parts) == 2:
            device, _, function = parts[1].partition(".")
            return f"0000:{int(parts[0], 16):02x}:{int(device, 16):02x}.{int(function or '0', 16)}"
    except ValueError:
        return None
    return None


def pcie_limit(gen: int | None, width: int | None) -> float | None:
    if gen is None or width is None or gen not in PCIE_GBPS_PER_LANE or width <= 0:
        return None
    return PCIE_GBPS_PER_LANE[gen] * width


def pair_limit(src: GpuLinks, dst: GpuLinks) -> LinkLimit:
    """The per-direction limit from ``src`` to ``dst``: NVLink when they share links, else PCIe."""
    dst_bus = norm_bus_id(dst.pci_bus_id)
    direct = [link for link in src.nvlinks if link.remote_kind == "gpu" and dst_bus is not None and link.remote_bus_id == dst_bus]
    dst_on_fabric = any(link.remote_kind == "switch" for link in dst.nvlinks)
    switched = [link for link in src.nvlinks if link.remote_kind == "switch"] if dst_on_fabric else []
    links = direct or switched
    if links:
        rate = NVLINK_GBPS_PER_LINK.get(src.compute_major or 0)
        how = "direct" if direct else "through NVSwitch"
        if rate is None:
            return LinkLimit("nvlink", None, f"{len(links)} NVLinks {how}, per-link rate unknown for this GPU generation")
        return LinkLimit("nvlink", rate * len(links), f"NV{len(links)} {how}: {len(links)} x {rate:g} GB/s")
    ends = [(pcie_limit(g.pcie_gen, g.pcie_width), g) for g in (src, dst)]
    if all(limit is not None for limit, _ in ends):
        limit, slower = min(ends, key=lambda pair: pair[0] or 0.0)
        return LinkLimit("pcie", limit, f"PCIe Gen{slower.pcie_gen} x{slower.pcie_width}: {limit:.1f} GB/s")
    errors = "; ".join(g.error for g in (src, dst) if g.error)
    return LinkLimit("unknown", None, errors or "PCIe generation/width not reported")


def _remote_kind(nvml: Any, handle: Any, link: int, remote: str | None, gpu_buses: set[str]) -> RemoteKind:
    getter = getattr(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None)
    if getter is not None:
        try:
            kind = int(getter(handle, link))
            return "gpu" if kind == 0 else "switch" if kind == 2 else "unknown"
        except Exception:
            pass
    if remote is None:
        return "unknown"
    return "gpu" if remote in gpu_buses else "switch"


def _read_one(nvml: Any, bus_id: str, compute_major: int | None, gpu_buses: set[str]) -> GpuLinks:
    try:
        handle = nvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    except Exception as exc:
        return GpuLinks(bus_id, compute_major, error=f"NVML has no GPU at {bus_id}: {exc}")
    gen = width = None
    try:
        gen = int(nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
        width = int(nvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
    except Exception:
        pass
    links: list[NvLink] = []
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            if int(nvml.nvmlDeviceGetNvLinkState(handle, link)) != 1:
                continue
        except Exception:
            continue
        try:
            remote = norm_bus_id(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId)
        except Exception:
            remote = None
        links.append(NvLink(remote, _remote_kind(nvml, handle, link, remote, gpu_buses)))
    return GpuLinks(bus_id, compute_major, gen, width, links)


def bus_id_from_uuid(uuid: str) -> str | None:
    """The PCI bus id NVML gives for a GPU UUID (``GPU-…`` or bare); None when NVML cannot say."""
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception:
        return None
    try:
        text = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        return norm_bus_id(nvml.nvmlDeviceGetPciInfo(nvml.nvmlDeviceGetHandleByUUID(text)).busId)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def read_links(bus_ids: Sequence[str | None], compute_majors: Sequence[int | None]) -> list[GpuLinks]:
    """NVML's view of each GPU (by PCI bus id); NVML missing or failing gives records with ``error``."""
    try:
        import pynvml as nvml

        nvml.nvmlInit()
    except Exception as exc:
        reason = f"NVML unavailable: {exc}"
        return [GpuLinks(bus, major, error=reason) for bus, major in zip(bus_ids, compute_majors, strict=False)]
    try:
        known = {b for b in (norm_bus_id(bus) for bus in bus_ids) if b}
        return [
            _read_one(nvml, bus, major, known) if bus else GpuLinks(None, major, error="PCI bus id unknown")
            for bus, major in zip(bus_ids, compute_majors, strict=False)
        ]
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
