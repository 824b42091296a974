"""The gpu rules' hardware fix: cooling, power delivery, a replacement; the hypervisor's or host's in a guest."""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.cloud import for_cloud
from rigaudit.tools.schema.finding import Action, Fix, Where


def hw_where(platform: Platform) -> Where:
    """Hardware fixes of a VM guest belong to the hypervisor, of a container to its host."""
    return layer_where(platform, "hardware")


def hardware_fix(
    inventory: GpuInventory,
    platform: Platform,
    indices: Iterable[int],
    summary: str,
    actions: tuple[Action, ...],
    verify: str,
    *,
    revert: str = "none",
    persist: str = "hardware changes persist",
) -> Fix:
    """A low-risk hardware fix of the GPUs at ``indices``, in a cloud the provider's steps (:func:`for_cloud`)."""
    fix = Fix(
        kind="hardware",
        where=hw_where(platform),
        summary=summary,
        actions=actions,
        risk="low",
        verify=verify,
        revert=revert,
        persist=persist,
    )
    chosen = set(indices)
    return for_cloud(fix, platform, [g for g in inventory.gpus if g.index in chosen])
