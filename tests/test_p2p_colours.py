"""The P2P heat map, in the terminal and in the report's image, colours each pair by its share of what its link
should give (its limit: NVLink links x rate, PCIe generation x width), never by the data's own spread."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rigaudit.orchestrator.report import plots
from rigaudit.orchestrator.report.plots import SHARE_LABEL, draw_p2p
from rigaudit.orchestrator.ui.pictures import p2p_heatmap

SHIPPED = Path(__file__).resolve().parents[1] / "docs" / "validation" / "h200x2" / "p2p.json"
GREEN, YELLOW, RED = "42", "43", "41"
"""The background colours of the terminal's standard palette."""


def _pairs(*speeds: tuple[int, int, float, float | None]) -> dict[str, Any]:
    pairs = [{"src": s, "dst": d, "unidir_gbps": v, "limit_gbps": limit, "data_ok": True} for s, d, v, limit in speeds]
    return {"schema": "rigaudit.p2p/1", "pairs": pairs}


def _image_colours(data: dict[str, Any], tmp_path: Path) -> dict[tuple[int, int], str]:
    """The colour of each pair's cell as drawn, by (row, column), and the colour bar's label under ``"bar"``."""
    plt = plots.pyplot()
    assert plt is not None
    draw_p2p(data)(plt, tmp_path / "p2p.png")
    figure = plt.gcf()
    image = figure.axes[0].images[0]
    rgba = image.to_rgba(image.get_array())
    out = {(i, j): _name(tuple(rgba[i][j][:3])) for i in range(len(rgba)) for j in range(len(rgba)) if i != j}
    labels = {ax.get_ylabel() for ax in figure.axes}
    plt.close("all")
    return {**out, ("bar", 0): " ".join(labels)}  # type: ignore[dict-item]


def _name(rgb: tuple[float, ...]) -> str:
    red, green, _ = rgb
    if red > 0.7 and green > 0.7:
        return "yellow"
    return "green" if green > red else "red"


def _cell_backgrounds(data: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=80, color_system="standard", force_terminal=True).print(p2p_heatmap(data))
    text = out.getvalue()
    return [code for code in (GREEN, YELLOW, RED) for _ in range(text.count(f";{code}m"))]


def test_the_shipped_p2p_result_is_one_colour_in_the_report_image(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    data = json.loads(SHIPPED.read_text())
    assert {round(p["unidir_gbps"], 1) for p in data["pairs"]} == {392.2, 388.9}  # both 86-87% of NV18's 450 GB/s
    colours = _image_colours(data, tmp_path)
    assert colours[(0, 1)] == colours[(1, 0)] == "green", colours
    assert SHARE_LABEL in colours[("bar", 0)]  # type: ignore[index]


def test_a_pair_is_coloured_by_its_link_not_by_the_other_pairs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    slow = _pairs((0, 1, 100.0, 450.0), (1, 0, 110.0, 450.0))  # 22% and 24% of an NV18 link: both far too slow
    mixed = _pairs((0, 1, 30.0, 63.0), (1, 0, 52.0, 63.0))  # 48% and 83% of PCIe Gen5 x16
    assert _image_colours(slow, tmp_path)[(0, 1)] == _image_colours(slow, tmp_path)[(1, 0)] == "red"
    assert [_image_colours(mixed, tmp_path)[k] for k in ((0, 1), (1, 0))] == ["red", "green"]
    assert _cell_backgrounds(slow) == [RED, RED]
    assert sorted(_cell_backgrounds(mixed)) == sorted([RED, GREEN])


def test_a_pair_whose_limit_is_unknown_is_not_coloured_and_the_legend_says_so() -> None:
    unknown = _pairs((0, 1, 40.0, None), (1, 0, 100.0, None))
    assert _cell_backgrounds(unknown) == []
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(p2p_heatmap(unknown))
    legend = " ".join(out.getvalue().split())
    assert "share of the link's limit" in legend and "none: limit unknown" in legend
