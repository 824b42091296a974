"""All investigators, in catalog order."""

from __future__ import annotations

import importlib

from agents.investigator import AnyInvestigator

AREA_MODULES: tuple[str, ...] = (
    "firmware",
    "kernel_params",
    "kernel_version",
    "numa",
    "pcie",
    "driver",
    "cuda_memory",
    "gpu",
    "power",
    "nccl_p2p",
    "nvlink",
    "container",
    "runtime",
)


def all_investigators() -> list[AnyInvestigator]:
    """Every investigator whose module exists (each module exposes ``INVESTIGATOR``)."""
    found: list[AnyInvestigator] = []
    for name in AREA_MODULES:
        qualified = f"agents.investigators.{name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name == qualified:
                continue
            raise
        found.append(module.INVESTIGATOR)
    return found


def select(areas: list[str] | None) -> list[AnyInvestigator]:
    investigators = all_investigators()
    if not areas:
        return investigators
    wanted = set(areas)
    return [inv for inv in investigators if inv.area in wanted]
