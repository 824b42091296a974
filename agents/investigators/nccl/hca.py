"""NCCL_IB_HCA as NCCL reads it: which RDMA devices a filter selects.

NCCL's environment variables (NCCL_IB_HCA): a comma-separated list of device names, each optionally followed by
``:port``; a leading ``^`` makes it an exclude list, and a ``=`` after it makes the names exact, else NCCL takes each
name as a prefix (``mlx5_1`` selects ``mlx5_10`` to ``mlx5_19`` as well).
"""

from __future__ import annotations

from collections.abc import Iterable

from rigaudit.tools.core.record import Record

SOURCE = "NCCL's environment variables, NCCL_IB_HCA: docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"


class HcaFilter(Record):
    """One NCCL_IB_HCA value: its device names (ports dropped), whether it excludes them, whether they are exact."""

    names: tuple[str, ...]
    exclude: bool
    exact: bool

    def selects(self, device: str) -> bool:
        named = any(device == n if self.exact else device.startswith(n) for n in self.names)
        return named != self.exclude


def parse_hca(value: str) -> HcaFilter | None:
    """``^=mlx5_1,mlx5_4`` -> names (mlx5_1, mlx5_4), exclude, exact; None for a value naming no device (NCCL's
    default: every device)."""
    text = value.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    names = tuple(name for token in text.split(",") if (name := token.split(":", 1)[0].strip()))
    return HcaFilter(names=names, exclude=exclude, exact=exact) if names else None


def in_name_order(devices: Iterable[str]) -> list[str]:
    """``mlx5_2`` before ``mlx5_10``."""

    def key(name: str) -> tuple[str, int]:
        stem, _, tail = name.rpartition("_")
        return (stem, int(tail)) if tail.isdecimal() else (name, -1)

    return sorted(devices, key=key)


def exact_value(devices: Iterable[str]) -> str:
    """The NCCL_IB_HCA value that selects exactly ``devices``: ``=mlx5_0,mlx5_1``."""
    return "=" + ",".join(in_name_order(devices))
