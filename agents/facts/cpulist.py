"""CPU lists as the kernel writes them (``0-3,8,10-11``), both ways."""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str | None) -> list[int] | None:
    """``0-3,8,10-11`` -> [0, 1, 2, 3, 8, 10, 11]; ``None`` when it does not parse."""
    if text is None:
        return None
    cpus: list[int] = []
    try:
        for part in text.strip().split(","):
            if not part:
                continue
            low, _, high = part.partition("-")
            cpus.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        return None
    return cpus


def cpu_ranges(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 8] -> ``cpu0-3,8``."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return "cpu" + ",".join(parts) if parts else "no CPUs"
