"""Pictures: the P2P heat map, the NCCL plot, the PCIe tree and the roofline bar, as text and as report images."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest
from rich.console import Console, RenderableType

from rigaudit.agents.facts.pcie_tree import collect_pcie_tree
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.report import plots
from rigaudit.orchestrator.report.plots import INSTALL_HINT, draw_nccl, draw_p2p, picture_markdown
from rigaudit.orchestrator.ui.pictures import nccl_plot, p2p_heatmap, pcie_tree, roofline_bar
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import PcieDevice
from tests.conftest import FIXTURES, SEED

PNG = b"\x89PNG\r\n\x1a\n"


def _text(renderable: RenderableType | None, width: int = 80) -> str:
    assert renderable is not None
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(renderable)
    return out.getvalue()


def _p2p(gpus: int = 8) -> dict[str, object]:
    pairs = [
        {
            "src": s,
            "dst": d,
            "unidir_gbps": 40.0 + s + d / 10,
            "fraction_of_limit": 0.5 if (s, d) == (0, 7) else 0.9,
            "data_ok": (s, d) != (1, 2),
        }
        for s in range(gpus)
        for d in range(gpus)
        if s != d
    ]
    return {"schema": "rigaudit.p2p/1", "pairs": pairs}


def _nccl() -> dict[str, object]:
    rows = [{"bytes": 1 << n, "busbw_gbps": float(n), "data_ok": True} for n in (20, 24, 28, 30)]
    return {"schema": "rigaudit.nccl/1", "rows": rows, "world_size": 8, "transport": "P2P/CUMEM"}


def test_p2p_heat_map_shows_every_pair_whole_at_80_columns() -> None:
    text = _text(p2p_heatmap(_p2p()))
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert "47.6" in text and "40.1" in text  # GPU7->GPU6 and GPU0->GPU1, whole
    assert " bad " in text and "data corrupted" in " ".join(text.split())  # the pair whose data check failed
    assert p2p_heatmap({"pairs": []}) is None


def test_nccl_plot_bars_grow_with_bus_bandwidth() -> None:
    text = _text(nccl_plot(_nccl()))
    bars = {line.split()[0]: line.count("█") for line in text.splitlines() if "█" in line}
    assert bars["1M"] < bars["16M"] < bars["256M"] < bars["1G"]
    assert "30.00" in text


def test_pcie_tree_places_every_gpu_under_its_switch() -> None:
    devices = anyio.run(lambda: collect_pcie_tree(Probe(SnapshotHost(SEED))))
    assert sum(d.kind == "gpu" for d in devices) == 8 and sum(d.kind == "switch" for d in devices) == 12
    text = _text(pcie_tree([PcieDevice(bdf=d.bdf, kind=d.kind, parent=d.parent) for d in devices]), 100)
    assert "PCIe tree: 8 GPU(s), 0 NIC(s), 12 switch port(s)" in text
    assert "switch 0000:02:00.0 › GPU 0000:03:00.0" in text
    assert len(text.splitlines()) <= 14
    vm = anyio.run(lambda: collect_pcie_tree(Probe(SnapshotHost(FIXTURES / "h200x2-vm"))))
    assert [d.kind for d in vm] == ["root", "gpu", "gpu"]


def test_roofline_bar_fills_the_measured_share() -> None:
    text = _text(roofline_bar(100.0, 25.0, "the plan: a few percent"))
    assert text.count("█") == 12 and "25.0 of 100.0 tok/s (25%)" in text and "a few percent" in text


@pytest.mark.parametrize(("name", "draw"), [("p2p", draw_p2p(_p2p(4))), ("nccl", draw_nccl(_nccl()))])
def test_report_pictures_are_images_beside_the_report_and_text(tmp_path: Path, name: str, draw: plots.Draw) -> None:
    pytest.importorskip("matplotlib")
    report = tmp_path / "system-improve.md"
    markdown = picture_markdown(name, name, report, draw, p2p_heatmap(_p2p(4)))
    images = list((tmp_path / "system-improve-images").iterdir())
    assert len(images) == 1 and images[0].read_bytes().startswith(PNG)
    assert f"](system-improve-images/{images[0].name})" in markdown and "```text" in markdown


def test_without_matplotlib_the_report_says_how_to_get_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plots, "pyplot", lambda: None)
    markdown = picture_markdown("p2p", "P2P bandwidth", tmp_path / "r.md", draw_p2p(_p2p(2)), p2p_heatmap(_p2p(2)))
    assert INSTALL_HINT in markdown and "GPU1" in markdown and not (tmp_path / "r-images").exists()


def test_the_audit_report_draws_the_pcie_tree(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report = tmp_path / "system-improve.md"
    assert main(["audit", "--snapshot", str(SEED), "--report", str(report), "--no-transcript", "--no-live"]) == 0
    text = report.read_text()
    assert "### PCIe tree" in text and "switch 0000:02:00.0 › GPU 0000:03:00.0" in text
    assert any(p.name.startswith("pcie-tree-") for p in (tmp_path / "system-improve-images").iterdir())


def test_roofline_bar_in_the_terminal_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.md"
    args = ["roofline", "--params-b", "8", "--bytes-per-param", "2", "--bandwidth-gbs", "1000", "--measured-tok-s", "31.25"]
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "31.2 of 62.5 tok/s (50%)" in out and out.count("█") == 25
    assert "### Decode roofline" in report.read_text()
