"""The key facts compared across a fleet: versions, per-GPU link and VBIOS, the P2P matrix.

Read from a node's snapshot through a Probe, so only what the audit's collectors recorded is used;
a fact the snapshot does not hold is left out (never guessed). Keys name the same thing on every
host (``GPU3 PCIe link``), values are short texts compared as they are.
"""

from __future__ import annotations

from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.investigators.p2p.status import P2P_STATUS
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.probe import Probe


def _speed(text: str | None) -> str | None:
    if not text:
        return None
    value = text.strip().split(" PCIe")[0].strip()
    return value or None


async def _p2p_summary(probe: Probe, indices: list[int]) -> str | None:
    pairs = [(a, b) for a in indices for b in indices if a != b]
    if not pairs:
        return None
    results = await probe.gather(*[lambda a=a, b=b: probe.nvml("nvmlDeviceGetP2PStatus", a, b, 0) for a, b in pairs])
    known = [(pair, r.value) for pair, r in zip(pairs, results, strict=True) if r.ok and isinstance(r.value, int)]
    if not known:
        return None
    bad = [f"{a}-{b} {P2P_STATUS.get(v, str(v))}" for (a, b), v in known if v != 0]
    if not bad:
        return f"read OK on all {len(known)} GPU pairs"
    shown = ", ".join(bad[:6]) + (f" (+{len(bad) - 6} more)" if len(bad) > 6 else "")
    return f"read not OK on {len(bad)} of {len(known)} pairs: {shown}"


async def fingerprint(host: Host) -> dict[str, str]:
    """The host's key facts (see the module docstring)."""
    probe = Probe(host, concurrency=16)
    facts: dict[str, str] = {}
    inventory = await collect_gpus(probe)
    kernel = await probe.text("/proc/sys/kernel/osrelease")
    if kernel and kernel.strip():
        facts["kernel"] = kernel.strip()
    if inventory.driver_version:
        facts["driver"] = inventory.driver_version
    cuda = await probe.nvml("nvmlSystemGetCudaDriverVersion")
    if cuda.ok and isinstance(cuda.value, int):
        facts["CUDA driver API"] = f"{cuda.value // 1000}.{cuda.value % 1000 // 10}"
    if inventory.gpus:
        facts["GPU count"] = str(len(inventory.gpus))
    for gpu in inventory.gpus:
        label = f"GPU{gpu.index}" if gpu.index is not None else f"GPU {gpu.bdf}"
        speed = await probe.text(f"{gpu.sysfs}/current_link_speed")
        width = await probe.text(f"{gpu.sysfs}/current_link_width")
        if _speed(speed) and width and width.strip():
            facts[f"{label} PCIe link"] = f"{_speed(speed)} x{width.strip()}"
        if gpu.index is not None:
            vbios = await probe.nvml("nvmlDeviceGetVbiosVersion", gpu.index)
            if vbios.ok and isinstance(vbios.value, str) and vbios.value:
                facts[f"{label} VBIOS"] = vbios.value
    p2p = await _p2p_summary(probe, inventory.nvml_indices)
    if p2p:
        facts["P2P"] = p2p
    return facts
