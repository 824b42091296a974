"""NCCL_IB_HCA as NCCL reads it (its environment variables' page): prefixes unless '=', '^' excludes, ports dropped."""

from __future__ import annotations

import pytest

from rigaudit.agents.investigators.nccl.hca import exact_value, parse_hca

DEVICES = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_10", "mlx5_11", "mlx4_0")


@pytest.mark.parametrize(
    ("value", "selected"),
    [
        ("mlx5", ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_10", "mlx5_11"]),
        ("mlx5_1", ["mlx5_1", "mlx5_10", "mlx5_11"]),
        ("=mlx5_0:1,mlx5_1:1", ["mlx5_0", "mlx5_1"]),
        ("^=mlx5_1,mlx5_4", ["mlx5_0", "mlx5_10", "mlx5_11", "mlx4_0"]),
        ("^mlx5_1", ["mlx5_0", "mlx5_4", "mlx4_0"]),
    ],
)
def test_a_filter_selects_what_nccl_would(value: str, selected: list[str]) -> None:
    hca = parse_hca(value)
    assert hca is not None
    assert [d for d in DEVICES if hca.selects(d)] == selected


def test_a_filter_naming_no_device_is_none_and_an_exact_value_is_in_name_order() -> None:
    assert parse_hca("") is None and parse_hca("^") is None
    assert exact_value(["mlx5_10", "mlx5_2", "mlx5_0"]) == "=mlx5_0,mlx5_2,mlx5_10"
