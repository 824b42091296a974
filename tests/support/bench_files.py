"""Bench results as the files ``bench compare`` and ``bench calibrate`` read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from rigaudit.tools.bench.results import BenchResult


def write_results(
    folder: Path, results: Iterable[BenchResult], stem: str = "r", *, first: Mapping[str, object] | None = None
) -> list[str]:
    """Each result as ``folder/STEM<i>.json`` (``i`` from 1), their paths in order; ``first``: fields of the first
    file replaced, as someone who crafted it wrote them (what no result validates as)."""
    paths = []
    for index, result in enumerate(results, start=1):
        text = result.to_json()
        if index == 1 and first is not None:
            text = json.dumps({**json.loads(text), **first})
        path = folder / f"{stem}{index}.json"
        path.write_text(text)
        paths.append(str(path))
    return paths
