"""The headline of a diff: the host facts that changed (GPUs 1 -> 2, NVLink appeared, driver, kernel).

A person comparing two audits first wants to know whether they compare like with like: the
baseline facts each audit recorded (``AuditResult.host.facts``) and what the NVLink check saw.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rigaudit.tools.schema.finding import Finding

_SKIPPED = frozenset({"host_id", "snapshot notes"})
"""Facts that name the machine or the recording, not its state."""
_ORDER = ("gpus", "driver", "cuda_driver", "kernel", "os", "platform", "cpu", "memory", "numa_nodes", "nvml", "lxc_containers")
_LABEL = {"gpus": "GPUs", "cuda_driver": "CUDA driver", "numa_nodes": "NUMA nodes", "nvml": "NVML", "os": "OS"}
_GPUS = re.compile(r"(\d+) x ")


def _gpu_count(text: str | None) -> int:
    return sum(int(n) for n in _GPUS.findall(text or ""))


def _nvlink(findings: Sequence[Finding]) -> bool | None:
    """Whether the audit saw NVLink (``None``: it could not tell)."""
    links = next((f for f in findings if f.check == "nvlink.links"), None)
    if links is None or links.status == "unknown":
        return None
    return links.status in ("ok", "problem")


def headline(
    facts_a: Mapping[str, str], facts_b: Mapping[str, str], findings_a: Sequence[Finding], findings_b: Sequence[Finding]
) -> list[str]:
    """One short phrase per host fact that differs between A and B, most telling first."""
    out: list[str] = []
    keys = [k for k in _ORDER if k in facts_a or k in facts_b]
    keys += sorted(k for k in {*facts_a, *facts_b} if k not in _ORDER and k not in _SKIPPED)
    for key in keys:
        a, b = facts_a.get(key), facts_b.get(key)
        if a == b:
            continue
        label = _LABEL.get(key, key)
        if key == "gpus":
            count_a, count_b = _gpu_count(a), _gpu_count(b)
            same = count_a == count_b
            out.append(f"GPUs {a} -> {b}" if same else f"GPUs {count_a} -> {count_b} ({a or 'none'} -> {b or 'none'})")
            continue
        out.append(f"{label} {a or 'not recorded'} -> {b or 'not recorded'}")
    seen_a, seen_b = _nvlink(findings_a), _nvlink(findings_b)
    if seen_a is not None and seen_b is not None and seen_a != seen_b:
        out.insert(1 if out and out[0].startswith("GPUs") else 0, "NVLink appeared" if seen_b else "NVLink disappeared")
    return out


__all__ = ["headline"]
