"""Fuzz: crafted and damaged snapshot trees through audit (each case two areas, in turn all of them), the diff
and share loaders, and every 12th case the whole `diff` and `snapshot --share` commands."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rigaudit.agents.registry import area_names
from rigaudit.tools.diffing._load import load_values
from rigaudit.tools.hosts.snapshot import SnapshotError
from rigaudit.tools.share._tree import load_tree
from tests.conftest import FIXTURES
from tests.support.fuzz import NODE_KINDS, Mutator, cases, check, replace_node, run_cli
from tests.support.mutate import light_copy

SMALL = FIXTURES / "h200x1-vm"
CASES = cases("snapshot", 48)
INDEXES = ("snapshot.json", "links.json", "dirs.json", "unreadable.json", "commands.jsonl", "nvml.jsonl")
_FILES = sorted(str(p.relative_to(SMALL)) for p in (SMALL / "files").rglob("*") if p.is_file() and not p.parent.name.isdigit())
"""Every mirrored file but the many /proc/PID ones (one of those is picked as often as all of them)."""
_PROC = sorted(str(p.relative_to(SMALL)) for p in (SMALL / "files" / "proc").glob("[0-9]*/*") if p.is_file())


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("outside")
    marker = "FUZZ-CANARY-7f3c9e1b"
    (folder / "secret").write_text(marker + "\n")
    return folder / "secret", marker


def _mutate(root: Path, mutator: Mutator, canary_file: Path) -> str:
    roll = mutator.rng.random()
    if roll < 0.55:
        name = mutator.choice(INDEXES)
        path = root / name
        data = path.read_bytes() if path.exists() else b"{}"
        what, mutated = mutator.jsonl(data) if name.endswith(".jsonl") else mutator.document(data)
        path.unlink(missing_ok=True)  # a light copy's files may be shared: never write one in place
        path.write_bytes(mutated)
        return f"{name}: {what}"
    kind = mutator.choice(NODE_KINDS)
    target = mutator.choice([*_FILES, mutator.choice(_PROC), "files", "files/sys", "snapshot.json", "commands.jsonl"])
    return f"{target}: {replace_node(root / target, kind, canary_file)}"


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_snapshot(case: str, tmp_path: Path, canary: tuple[Path, str]) -> None:
    canary_file, marker = canary
    mutator = Mutator(case)
    root = light_copy(SMALL, tmp_path / "snap")
    what = f"{case} {_mutate(root, mutator, canary_file)}"
    number = int(case.split("#")[1])
    areas = list(area_names())
    chosen = ",".join(areas[(2 * number + k) % len(areas)] for k in range(2))
    out = tmp_path / "out"
    out.mkdir()
    argv = ["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--areas", chosen, "--json", str(out / "a.json")]
    check(run_cli(argv), what, canary=marker, allowed=frozenset({0, 2, 4}), written=out)
    try:
        values = load_values(root)
        tree = load_tree(root)
    except SnapshotError:
        pass
    else:
        assert not any(marker.encode() in (values.read(p) or b"") for p in values.files), what
        assert not any(marker.encode() in data for data in tree.files.values()), what
    if number % 12 == 0:
        check(run_cli(["diff", str(root), str(SMALL), "--json", str(out / "d.json")]), what, canary=marker, written=out)
        bundle = out / "b.tar.gz"
        outcome = run_cli(["snapshot", "--share", "--from", str(root), "-o", str(bundle)])
        check(outcome, what, canary=marker, allowed=frozenset({0, 2}))
        if bundle.exists():
            assert marker.encode() not in gzip.decompress(bundle.read_bytes()), what
