"""Pictures in system-improve.md: PNG images drawn with matplotlib (the ``rigaudit[plots]`` extra), and
always the same picture as text, so that a report read in a terminal or without the extra shows it too.

Images go beside the report, in ``<report stem>-images/``, named by what they show and when.
Without matplotlib the report says how to get them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType

from rigaudit.tools.bench.p2p import FAR_BELOW, NEAR_LIMIT, share_of_limit
from rigaudit.tools.files.outputs import Kind, OutputRefused, check_output
from rigaudit.tools.schema.events.audit import PcieDevice

INSTALL_HINT = "pip install 'rigaudit[plots]'"
SHARE_LABEL = "share of the link's limit (grey: limit unknown)"
"""The P2P heat map's colour bar: what its colours measure."""
Draw = Callable[[Any, Path], None]
"""Draws with ``pyplot`` into the file at the path."""


def pyplot() -> Any | None:
    """matplotlib's pyplot on a non-interactive backend, or ``None`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def as_text(renderable: RenderableType, width: int = 100) -> str:
    """A rich renderable as plain text (no colour), for a code block."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, highlight=False, force_terminal=False).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def _refused(folder: Path) -> str | None:
    """Why the images folder may not be written (a link another user planted in a shared folder), or ``None``."""
    try:
        check_output(folder, "the report's images folder", Kind.FOLDER)
    except OutputRefused as exc:
        return str(exc)
    return None


def picture_markdown(name: str, title: str, report: Path, draw: Draw, text: RenderableType | None) -> str:
    """Markdown for one picture: the image (drawn now beside ``report``) and the text picture."""
    parts: list[str] = []
    plt = pyplot()
    folder = report.with_name(f"{report.stem}-images")
    refused = _refused(folder) if plt is not None else None
    if plt is None:
        parts.append(f"_{title}: the image needs matplotlib ({INSTALL_HINT}); the text picture follows._")
    elif refused is not None:
        parts.append(f"_{title}: the image was not drawn ({refused}); the text picture follows._")
    else:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        image = folder / f"{name}-{stamp}.png"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            draw(plt, image)
        finally:
            plt.close("all")
        parts.append(f"![{title}]({folder.name}/{image.name})")
    if text is not None:
        parts += ["", "```text", as_text(text), "```"]
    return "\n".join(parts) + "\n"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def draw_p2p(data: Mapping[str, Any]) -> Draw:
    """The P2P one-way bandwidth matrix as a heat map, each cell labelled with its GB/s and coloured by its share
    of its link's limit, in the bands of the text picture (never by the data's own minimum and maximum)."""

    def draw(plt: Any, path: Path) -> None:
        from matplotlib.colors import BoundaryNorm, ListedColormap

        pairs = [p for p in data.get("pairs") or [] if isinstance(p, Mapping)]
        gpus = sorted({int(p["src"]) for p in pairs} | {int(p["dst"]) for p in pairs})
        at = {g: i for i, g in enumerate(gpus)}
        shares = [[float("nan")] * len(gpus) for _ in gpus]
        labels = [[""] * len(gpus) for _ in gpus]
        for pair in pairs:
            i, j = at[int(pair["src"])], at[int(pair["dst"])]
            share = share_of_limit(pair)
            speed = _number(pair.get("unidir_gbps"))
            shares[i][j] = float("nan") if share is None else min(share, 1.0)
            labels[i][j] = "bad" if pair.get("data_ok") is False else "" if speed is None else f"{speed:.0f}"
        colours = ListedColormap(["#d73027", "#fee08b", "#1a9850"]).with_extremes(bad="#dddddd")
        bands = BoundaryNorm([0.0, FAR_BELOW, NEAR_LIMIT, 1.0], colours.N)
        fig, ax = plt.subplots(figsize=(1.6 + 0.7 * len(gpus), 0.8 + 0.6 * len(gpus)))
        shown = ax.imshow(shares, cmap=colours, norm=bands)
        for i, row in enumerate(labels):
            for j, label in enumerate(row):
                if label:
                    ax.text(j, i, label, ha="center", va="center", fontsize=8)
        names = [f"GPU{g}" for g in gpus]
        ax.set_xticks(range(len(gpus)), names, rotation=45)
        ax.set_yticks(range(len(gpus)), names)
        ax.set_xlabel("to")
        ax.set_ylabel("from")
        ax.set_title("P2P one-way bandwidth (GB/s)")
        bar = fig.colorbar(shown, ax=ax, ticks=[0.0, FAR_BELOW, NEAR_LIMIT, 1.0])
        bar.ax.set_yticklabels([f"{t:.0%}" for t in (0.0, FAR_BELOW, NEAR_LIMIT, 1.0)])
        bar.set_label(SHARE_LABEL)
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    return draw


def draw_nccl(data: Mapping[str, Any]) -> Draw:
    """All-reduce bus bandwidth by message size (log size axis)."""

    def draw(plt: Any, path: Path) -> None:
        rows = [r for r in data.get("rows") or [] if isinstance(r, Mapping) and _number(r.get("busbw_gbps")) is not None]
        sizes = [int(r.get("bytes", 0)) for r in rows]
        busbw = [_number(r["busbw_gbps"]) for r in rows]
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(sizes, busbw, marker="o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"NCCL all-reduce, {data.get('world_size', '?')} ranks ({data.get('transport') or 'transport unknown'})")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    return draw


def draw_roofline(bound: float, measured: float | None) -> Draw:
    """One horizontal bar: the decode bound, and the measured tokens/s inside it."""

    def draw(plt: Any, path: Path) -> None:
        fig, ax = plt.subplots(figsize=(6, 1.8))
        ax.barh([0], [bound], color="#dddddd", label=f"bound {bound:,.1f} tok/s")
        if measured is not None:
            ax.barh([0], [measured], color="#2e7d32", label=f"measured {measured:,.1f} tok/s ({measured / bound:.0%})")
        ax.set_yticks([])
        ax.set_xlabel("single-stream decode tokens/s")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    return draw


def draw_pcie(devices: Sequence[PcieDevice]) -> Draw:
    """The PCIe tree, leaves spread along the bottom, each parent above its children."""

    def draw(plt: Any, path: Path) -> None:
        children: dict[str | None, list[PcieDevice]] = {}
        for device in devices:
            children.setdefault(device.parent, []).append(device)
        place: dict[str, tuple[float, int]] = {}
        leaves = [0]

        def lay(device: PcieDevice, depth: int) -> float:
            below = children.get(device.bdf, [])
            if below:
                x = sum(lay(child, depth + 1) for child in below) / len(below)
            else:
                x = float(leaves[0])
                leaves[0] += 1
            place[device.bdf] = (x, depth)
            return x

        for root in children.get(None, []):
            lay(root, 0)
        depth = max((d for _, d in place.values()), default=0)
        fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * leaves[0]), 1.0 + 0.9 * depth))
        colours = {"gpu": "#2e7d32", "nic": "#00838f", "nvswitch": "#6a1b9a", "switch": "#f9a825", "port": "#90a4ae"}
        for device in devices:
            x, y = place[device.bdf]
            if device.parent in place:
                px, py = place[device.parent]
                ax.plot([px, x], [-py, -y], color="#999999", linewidth=1, zorder=1)
            ax.scatter([x], [-y], s=120, color=colours.get(device.kind, "#999999"), zorder=2)
            label = device.kind.upper() if device.kind in ("gpu", "nic") else device.kind
            ax.annotate(f"{label}\n{device.bdf}", (x, -y), textcoords="offset points", xytext=(0, -22), ha="center", fontsize=6)
        ax.set_axis_off()
        ax.set_title("PCIe tree: GPUs, switches and NICs")
        ax.set_ylim(-depth - 0.8, 0.5)
        fig.tight_layout()
        fig.savefig(path, dpi=110)

    return draw


__all__ = ["INSTALL_HINT", "as_text", "draw_nccl", "draw_p2p", "draw_pcie", "draw_roofline", "picture_markdown", "pyplot"]
