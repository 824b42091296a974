"""Pictures in the terminal, where a person would rather look than read (rich renderables, plain text too).

- :func:`p2p_heatmap`: the P2P bandwidth matrix (one-way GB/s, source row, destination column),
  each cell shaded by its share of what its link should give (never by the data's own spread).
- :func:`nccl_plot`: NCCL all-reduce bus bandwidth by message size, a bar per size.
- :func:`pcie_tree`: where the GPUs, switches and NICs sit under each root complex.
- :func:`roofline_bar`: measured tokens/s against the decode bound, with what the plan can buy.

Each works without colour: the numbers are in the cells, the bars are characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from rigaudit.tools.bench.p2p import FAR_BELOW, NEAR_LIMIT, share_of_limit
from rigaudit.tools.schema.events.audit import PcieDevice

_SHADES = ((NEAR_LIMIT, "black on green"), (FAR_BELOW, "black on yellow"), (0.0, "white on red"))
P2P_LEGEND = (
    f"colour: share of the link's limit (NVLink links x rate, PCIe generation x width): green {NEAR_LIMIT:.0%} or more; "
    f"yellow {FAR_BELOW:.0%}-{NEAR_LIMIT:.0%}; red below {FAR_BELOW:.0%}; none: limit unknown; bad: data corrupted"
)
_LABEL = {"root": "", "port": "port", "switch": "switch", "gpu": "GPU", "nvswitch": "NVSwitch", "nic": "NIC"}
_STYLE = {"gpu": "bold green", "nic": "bold cyan", "nvswitch": "bold magenta", "switch": "yellow", "port": "", "root": "bold"}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _shade(fraction: float | None) -> str:
    if fraction is None:
        return ""
    return next(style for floor, style in _SHADES if fraction >= floor)


def p2p_heatmap(data: Mapping[str, Any]) -> Table | None:
    """The one-way bandwidth of every GPU pair (``rigaudit.p2p/1``) as a shaded matrix; ``None`` without pairs."""
    pairs = [p for p in data.get("pairs") or [] if isinstance(p, Mapping)]
    gpus = sorted({int(p["src"]) for p in pairs} | {int(p["dst"]) for p in pairs})
    if not pairs:
        return None
    cells = {(int(p["src"]), int(p["dst"])): p for p in pairs}
    table = Table(title="P2P one-way GB/s (row: from, column: to)", title_justify="left", show_lines=False)
    table.add_column("", no_wrap=True)
    for gpu in gpus:
        table.add_column(f"GPU{gpu}", justify="right", no_wrap=True, min_width=5)
    for src in gpus:
        row: list[Text | str] = [f"GPU{src}"]
        for dst in gpus:
            pair = cells.get((src, dst))
            if src == dst or pair is None:
                row.append(Text("—", style="dim"))
                continue
            speed = _number(pair.get("unidir_gbps"))
            text = "bad" if pair.get("data_ok") is False else "—" if speed is None else f"{speed:,.1f}"
            row.append(Text(text, style=_shade(share_of_limit(pair))))
        table.add_row(*row)
    table.caption = P2P_LEGEND
    return table


def _size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def nccl_plot(data: Mapping[str, Any], width: int = 40) -> Table | None:
    """Bus bandwidth by message size (``rigaudit.nccl/1``), a bar per size scaled to the best; ``None`` without rows."""
    rows = [r for r in data.get("rows") or [] if isinstance(r, Mapping) and _number(r.get("busbw_gbps")) is not None]
    if not rows:
        return None
    best = max(_number(r["busbw_gbps"]) or 0.0 for r in rows) or 1.0
    table = Table(title="NCCL all-reduce bus bandwidth by size", title_justify="left", box=None, show_header=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("busbw", no_wrap=True, ratio=1)
    table.add_column("GB/s", justify="right", no_wrap=True)
    for row in rows:
        busbw = _number(row["busbw_gbps"]) or 0.0
        bar = "█" * max(1, round(width * busbw / best)) if busbw > 0 else ""
        style = "red" if row.get("data_ok") is False else "green"
        table.add_row(_size(int(row.get("bytes", 0))), Text(bar, style=style), f"{busbw:,.2f}")
    return table


def _label(device: PcieDevice, labels: Mapping[str, str]) -> Text:
    word = _LABEL.get(device.kind, device.kind)
    text = Text(f"{word} " if word else "", style=_STYLE.get(device.kind, ""))
    name = labels.get(device.bdf, "")
    text.append(device.bdf + (f" {name}" if name else ""))
    return text


def pcie_tree(devices: Sequence[PcieDevice], labels: Mapping[str, str] | None = None) -> Tree | None:
    """Root complexes, their ports and switches, and the GPUs, NVSwitches and NICs below them (a chain
    with no branching on one line, ``›`` between); ``None`` when empty."""
    if not devices:
        return None
    labels = labels or {}
    children: dict[str | None, list[PcieDevice]] = {}
    for device in devices:
        children.setdefault(device.parent, []).append(device)
    counts = {kind: sum(1 for d in devices if d.kind == kind) for kind in ("gpu", "nic", "switch")}
    summary = f"{counts['gpu']} GPU(s), {counts['nic']} NIC(s), {counts['switch']} switch port(s)"
    tree = Tree(Text(f"PCIe tree: {summary}", style="bold"))

    def grow(branch: Tree, device: PcieDevice) -> None:
        text = _label(device, labels)
        while len(below := children.get(device.bdf, [])) == 1:
            device = below[0]
            text.append(" › ", style="dim")
            text.append_text(_label(device, labels))
        twig = branch.add(text)
        for child in children.get(device.bdf, []):
            grow(twig, child)

    for root in children.get(None, []):
        grow(tree, root)
    return tree


def roofline_bar(bound: float, measured: float | None, plan: str = "", width: int = 50) -> Text:
    """``measured ████░░░░ bound``: how much of the single-stream decode bound is used, and what the plan can buy."""
    text = Text()
    if bound <= 0:
        return Text("roofline: no bound (bandwidth or bytes per token unknown)")
    used = 0 if measured is None else min(width, round(width * measured / bound))
    text.append("█" * used, style="green")
    text.append("░" * (width - used), style="dim")
    if measured is not None:
        text.append(f" {measured:,.1f} of {bound:,.1f} tok/s ({measured / bound:.0%})")
    else:
        text.append(f" bound {bound:,.1f} tok/s")
    if plan:
        text.append(f"\n{plan}", style="yellow")
    return text


__all__ = ["P2P_LEGEND", "nccl_plot", "p2p_heatmap", "pcie_tree", "roofline_bar"]
