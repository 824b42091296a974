"""Result files are untrusted: figures at the ends of the float range compare without an overflow."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.stats import growth

SESSION = Path(__file__).resolve().parent.parent / "docs" / "validation" / "h200-run2" / "aa-01.json"
KEPT = ("schema", "host", "host_id")


def _scaled(node: Any, factor: float) -> Any:
    if isinstance(node, dict):
        return {k: v if k in KEPT else _scaled(v, factor) for k, v in node.items()}
    if isinstance(node, list):
        return [_scaled(v, factor) for v in node]
    if isinstance(node, float) and node > 0:
        return node * factor
    return node


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_growth_saturates_instead_of_overflowing() -> None:
    assert growth(0.0) == 0.0
    assert growth(math.log(1.5)) == pytest.approx(0.5)
    assert growth(2000.0) == pytest.approx(sys.float_info.max, rel=1e-9)
    assert math.isfinite(growth(1e308))
    assert growth(-2000.0) == -1.0


@pytest.mark.parametrize(("base", "new"), [(1e-290, 1e290), (1e290, 1e-290)])
def test_figures_far_apart_are_a_verdict_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: float, new: float
) -> None:
    source = json.loads(SESSION.read_text())
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    a.write_text(json.dumps(_scaled(source, base)))
    b.write_text(json.dumps(_scaled(source, new)))
    code = main(["bench", "compare", str(a), str(b), "--json", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "Traceback" not in err
    document = _strict(out.read_text())  # no Infinity/NaN: valid JSON for any reader
    assert document
