"""Fuzz, the attack classes of a second review: crafted (not random) inputs, each named by what it is.

Every file input (a snapshot's indexes, an audit result, a plan, a benchmark result, a transcript, a
journal) gets each crafted JSON text: duplicate keys, ``1e999``, ``NaN`` and ``-Infinity``, a byte-order
mark, a lone surrogate, and terminal escape sequences with bidi and zero-width characters; a snapshot
also gets hostile nodes (a socket, a link loop, a dangling link, a directory 400 deep, a directory where
a file is, file names holding escapes). Every case holds :func:`tests.support.fuzz.check`; a case whose
text carries escapes also shows none raw on the terminal or in a report.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from tests.conftest import FIXTURES
from tests.support.apply import fast_tmp, mini_seed, seed_plan
from tests.support.fuzz import Outcome, check, run_cli
from tests.support.mutate import light_copy
from tests.test_compare import _result

SMALL = FIXTURES / "h200x1-vm"
MARKER = "FUZZ-CANARY-attack-91be"
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\u202etxt.exe\u200b\u2066"
RAW = ("\x1b", "\x07", "\u202e", "\u200b", "\u2066")
TEXTS = ("duplicate key", "1e999", "NaN", "-Infinity", "byte-order mark", "lone surrogate", "escapes")


def _leaves(node: Any, out: list[tuple[Any, Any]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            (out.append((node, key)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None)
            _leaves(value, out)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            (out.append((node, index)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None)
            _leaves(value, out)


def crafted(data: bytes, kind: str) -> bytes:
    """One JSON document's text, crafted as ``kind`` says (a token no JSON writer emits, where one is needed)."""
    if kind == "byte-order mark":
        return b"\xef\xbb\xbf" + data
    doc = json.loads(data)
    leaves: list[tuple[Any, Any]] = []
    _leaves(doc, leaves)
    strings = [(p, k) for p, k in leaves if isinstance(p[k], str)] or leaves
    numbers = [(p, k) for p, k in leaves if not isinstance(p[k], str)] or leaves
    if kind == "duplicate key" and isinstance(doc, dict) and doc:
        first = next(iter(doc))
        return b"{" + json.dumps(first).encode() + b": " + json.dumps(ESCAPES).encode() + b", " + data.lstrip()[1:]
    token = {"1e999": "1e999", "NaN": "NaN", "-Infinity": "-Infinity", "lone surrogate": '"\\ud800x"'}.get(kind)
    pool = numbers if kind in ("1e999", "NaN", "-Infinity") else strings
    if not pool:
        return data
    parent, key = pool[len(pool) // 2]
    if kind == "escapes":
        parent[key] = f"{parent[key]}{ESCAPES}"
        return json.dumps(doc, ensure_ascii=False).encode()
    parent[key] = "@@CRAFTED@@"
    return json.dumps(doc).replace('"@@CRAFTED@@"', token or '""').encode()


def crafted_lines(data: bytes, kind: str, index: int | None = None) -> bytes:
    """A JSONL file with one line (the middle one, or ``index``) crafted."""
    lines = data.splitlines(keepends=True)
    at = len(lines) // 2 if index is None else index
    if kind == "byte-order mark" or not lines:
        return crafted(data, kind) if kind == "byte-order mark" else data
    lines[at] = crafted(lines[at], kind) + b"\n"
    return b"".join(lines)


def no_raw_controls(outcome: Outcome, case: str, written: Path | None = None) -> None:
    """Escapes from an input never reach the terminal or a report raw."""
    texts = {"terminal": outcome.out + outcome.err}
    if written is not None:
        texts |= {p.name: p.read_text("utf-8", "replace") for p in written.rglob("*.md") if p.is_file()}
    bad = [f"{name}: {ch!r}" for name, text in texts.items() for ch in RAW if ch in text]
    assert bad == [], f"fuzz case {case}: raw control characters shown: {bad}"


# -- documents ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audit_json(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("attack-audit") / "a.json"
    assert main(["audit", "--snapshot", str(SMALL), "--no-live", "--no-transcript", "--json", str(out)]) in (0, 4)
    return out.read_bytes()


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("attack-transcript") / "t.jsonl"
    argv = ["audit", "--snapshot", str(SMALL), "--areas", "gpu,driver", "--no-live", "--transcript", str(path)]
    assert main(argv) in (0, 4)
    return path.read_bytes()


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for folder in fast_tmp(tmp_path_factory.mktemp("attack-mini")):
        yield mini_seed(folder / "mini")


@pytest.mark.parametrize("kind", TEXTS)
def test_a_crafted_audit_result(kind: str, tmp_path: Path, audit_json: bytes) -> None:
    (tmp_path / "a.json").write_bytes(crafted(audit_json, kind))
    (tmp_path / "good.json").write_bytes(audit_json)
    outcome = run_cli(["diff", str(tmp_path / "a.json"), str(tmp_path / "good.json")])
    check(outcome, f"audit-json {kind}", canary=MARKER, written=tmp_path)
    no_raw_controls(outcome, f"audit-json {kind}")


@pytest.mark.parametrize("kind", TEXTS)
def test_a_crafted_bench_result(kind: str, tmp_path: Path) -> None:
    good = _result({1: [100, 104, 97, 101, 99], 8: [400, 410, 395, 405, 402]}).model_dump_json().encode()
    (tmp_path / "base.json").write_bytes(good)
    (tmp_path / "new.json").write_bytes(crafted(good, kind))
    outcome = run_cli(["bench", "compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--no-transcript"])
    check(outcome, f"bench {kind}", canary=MARKER)
    no_raw_controls(outcome, f"bench {kind}")


@pytest.mark.parametrize("kind", TEXTS)
def test_a_crafted_plan(kind: str, tmp_path: Path, mini: Path) -> None:
    for folder in fast_tmp(tmp_path):
        plan = folder / "plan.json"
        plan.write_bytes(crafted(seed_plan().model_dump_json().encode(), kind))
        argv = ["apply", "--snapshot", str(mini), "--into", str(folder / "copy"), "--plan", str(plan), "--yes"]
        outcome = run_cli([*argv, "--journal", str(folder / "j.jsonl"), "--no-transcript"])
        check(outcome, f"plan {kind}", canary=MARKER, written=folder)
        no_raw_controls(outcome, f"plan {kind}")


@pytest.mark.parametrize("kind", TEXTS)
def test_a_crafted_transcript(kind: str, tmp_path: Path, transcript: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "t.jsonl"
    path.write_bytes(crafted_lines(transcript, kind))
    outcome = run_cli(["replay", str(path), "--no-live"])
    check(outcome, f"transcript {kind}", canary=MARKER, allowed=frozenset({0, 1, 2}))
    no_raw_controls(outcome, f"transcript {kind}")


@pytest.fixture(scope="module")
def applied(mini: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, bytes]]:
    """One apply of the seed plan into a copy of the mini seed: that copy and its journal (each case rolls back a
    copy of its own)."""
    for folder in fast_tmp(tmp_path_factory.mktemp("attack-applied")):
        plan = folder / "plan.json"
        plan.write_text(seed_plan().model_dump_json())
        journal = folder / "j.jsonl"
        argv = ["apply", "--snapshot", str(mini), "--into", str(folder / "copy"), "--plan", str(plan), "--yes"]
        assert main([*argv, "--journal", str(journal), "--no-transcript"]) == 0
        yield folder / "copy", journal.read_bytes()


@pytest.mark.parametrize("kind", TEXTS)
def test_a_crafted_journal(kind: str, tmp_path: Path, applied: tuple[Path, bytes]) -> None:
    copy, journaled = applied
    for folder in fast_tmp(tmp_path):
        shutil.copytree(copy, folder / "copy")
        journal = folder / "j.jsonl"
        journal.write_bytes(crafted_lines(journaled, kind, index=1))
        outcome = run_cli(["rollback", str(journal), "--snapshot", str(folder / "copy"), "--yes", "--no-transcript"])
        check(outcome, f"journal {kind}", canary=MARKER, allowed=frozenset({0, 1, 2}))
        no_raw_controls(outcome, f"journal {kind}")


# -- snapshots ---------------------------------------------------------------------------------


def _audit(root: Path, out: Path, case: str) -> None:
    argv = ["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--areas", "gpu,driver,kernel"]
    outcome = run_cli([*argv, "--all", "--json", str(out / "a.json"), "--report", str(out / "r.md")])
    check(outcome, case, canary=MARKER, allowed=frozenset({0, 2, 4}), written=out)
    no_raw_controls(outcome, case, written=out)


@pytest.mark.parametrize("kind", TEXTS)
@pytest.mark.parametrize("index", ["nvml.jsonl", "commands.jsonl", "snapshot.json"])
def test_a_crafted_snapshot_index(index: str, kind: str, tmp_path: Path) -> None:
    root = light_copy(SMALL, tmp_path / "snap")
    path = root / index
    data = path.read_bytes()
    path.unlink()  # a light copy's files are shared: replace, never write in place
    path.write_bytes(crafted(data, kind) if index.endswith(".json") else crafted_lines(data, kind))
    out = tmp_path / "out"
    out.mkdir()
    _audit(root, out, f"snapshot {index} {kind}")


NODES = ("socket", "link loop", "dangling link", "deep folders", "folder for a file", "escapes in names")


def _node(root: Path, kind: str, outside: Path) -> None:
    files = root / "files"
    target = files / "etc" / "os-release"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    if kind == "socket":
        here = Path.cwd()
        os.chdir(target.parent)  # a socket's path is short: bind it by its name
        try:
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(target.name)
        finally:
            os.chdir(here)
    elif kind == "link loop":
        target.symlink_to(target.name)
    elif kind == "dangling link":
        target.symlink_to(outside / "missing")
    elif kind == "deep folders":
        deep = files / "sys" / "class" / "drm"
        shutil.rmtree(deep, ignore_errors=True)
        for _ in range(400):
            deep = deep / "d"
        deep.mkdir(parents=True)
        (deep / "x").write_text(MARKER)
    elif kind == "folder for a file":
        target.mkdir()
    elif kind == "escapes in names":
        (files / "etc" / f"evil{ESCAPES}\nname").write_text("x\n")
        (files / "proc" / f"9{ESCAPES}").mkdir(parents=True)


@pytest.mark.parametrize("kind", NODES)
def test_a_hostile_snapshot_node(kind: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(MARKER + "\n")
    root = light_copy(SMALL, tmp_path / "snap")
    _node(root, kind, outside)
    out = tmp_path / "out"
    out.mkdir()
    _audit(root, out, f"snapshot node {kind}")
    outcome = run_cli(["diff", str(root), str(SMALL)])
    check(outcome, f"diff node {kind}", canary=MARKER, allowed=frozenset({0, 1, 2}))
    no_raw_controls(outcome, f"diff node {kind}")
    bundle = out / "b.tar.gz"
    outcome = run_cli(["snapshot", "--share", "--from", str(root), "-o", str(bundle)])
    check(outcome, f"share node {kind}", canary=MARKER, allowed=frozenset({0, 2}))
    no_raw_controls(outcome, f"share node {kind}")


def test_every_crafted_text_still_parses_as_python_reads_json(audit_json: bytes) -> None:
    """The crafted texts reach the readers' validation (Python's JSON accepts each), but the byte-order mark."""
    for kind in TEXTS:
        if kind != "byte-order mark":
            json.loads(crafted(audit_json, kind))
    assert os.path.exists(SMALL)
