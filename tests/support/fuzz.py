"""A small deterministic fuzzer over rigaudit's file inputs: mutate real fixtures, run the CLI, check the outcome.

Every case is named by its input, its number and the mutation it made (``snapshot#12 nvml.jsonl: deep 1500``),
and seeded from that name, so a failure reproduces by its name alone. Mutations: truncation, bit flips, NUL
bytes, invalid UTF-8, huge numbers, deep nesting, wrong types, shell text and outside paths, long strings, and,
for trees, links out of the tree, FIFOs, character devices and oversized files (see :class:`Mutator`).

:func:`run_cli` runs ``rigaudit`` in this process (fast) with its output captured; :func:`check` asserts what
every case must hold: an exit status rigaudit documents, at most one line of error, no traceback, a CPU time
bound, and the canary (the content of a file outside every input, which the crafted links point at) nowhere in what
was printed or written.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigaudit.orchestrator.cli import main

EXIT_CODES = frozenset({0, 1, 2, 3, 4})
"""0 ok, 1 differences or a failed change, 2 usage error or refused input, 3 not approved, 4 incomplete; --fail-on: 1."""
CPU_BOUND_S = 20.0
"""No case may spend more CPU time (this process's, every thread's): a runaway loop fails at once, at any load
(a wall-clock bound would fail on a busy machine); a case that blocks is caught by the test's timeout."""
_SHELL = "$(touch /tmp/rigaudit-fuzz-pwned)`id`;reboot\n"


@dataclass(frozen=True)
class Outcome:
    code: int | None
    out: str
    err: str
    cpu_s: float
    error: BaseException | None = None


def run_cli(argv: Sequence[str]) -> Outcome:
    """``rigaudit ARGV`` in this process; an exception escaping ``main`` is recorded, not raised."""
    out, err = io.StringIO(), io.StringIO()
    started = time.process_time()
    code: int | None = None
    error: BaseException | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:
            error = exc
    return Outcome(code, out.getvalue(), err.getvalue(), time.process_time() - started, error)


def _written(folder: Path | None) -> str:
    if folder is None or not folder.exists():
        return ""
    parts = []
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_size < 64 * 1024 * 1024:
                parts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def check(outcome: Outcome, case: str, *, canary: str, allowed: frozenset[int] = EXIT_CODES, written: Path | None = None) -> None:
    """The properties every fuzz case must hold (see the module docstring)."""
    where = f"fuzz case {case}"
    assert outcome.error is None, f"{where}: {outcome.error.__class__.__name__} escaped: {outcome.error}"
    assert outcome.code in allowed, f"{where}: exit status {outcome.code}\n{outcome.err[-2000:]}"
    for text in (outcome.out, outcome.err):
        assert "Traceback" not in text, f"{where}: traceback printed\n{text[-3000:]}"
    if outcome.code == 2:
        lines = [line for line in outcome.err.splitlines() if line.strip() and "warning" not in line]
        assert len(lines) <= 1, f"{where}: the error is not one line:\n{outcome.err[-2000:]}"
    assert outcome.cpu_s < CPU_BOUND_S, f"{where}: took {outcome.cpu_s:.1f} s of CPU time"
    assert canary not in outcome.out + outcome.err + _written(written), f"{where}: an outside file was read"


class Mutator:
    """Deterministic mutations of bytes, JSON values and JSONL files (seeded by the case name)."""

    def __init__(self, case: str) -> None:
        self.rng = random.Random(case)

    def choice(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    # -- bytes ----------------------------------------------------------------------------

    def bytes_(self, data: bytes) -> tuple[str, bytes]:
        rng = self.rng
        at = rng.randrange(len(data) + 1) if data else 0
        kind = self.choice(["truncate", "flip", "nul", "utf8", "number", "nest", "repeat", "empty"])
        if kind == "truncate":
            return f"truncated at {at}", data[:at]
        if kind == "flip":
            out = bytearray(data or b"\0")
            for _ in range(rng.randint(1, 8)):
                out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
            return "bits flipped", bytes(out)
        if kind == "nul":
            return f"NUL at {at}", data[:at] + b"\0" + data[at:]
        if kind == "utf8":
            return f"invalid UTF-8 at {at}", data[:at] + b"\xff\xfe\xc3" + data[at:]
        if kind == "number":
            return "a huge number", re.sub(rb"\d+", b"9" * 400, data, count=3)
        if kind == "nest":
            depth = self.choice([100, 2000, 100_000])
            return f"nesting {depth} at {at}", data[:at] + b"[" * depth + b"]" * depth + data[at:]
        if kind == "repeat":
            first = (data.splitlines(keepends=True) or [b"x\n"])[0]
            times = max(2, min(20_000, 4_000_000 // len(first)))  # a few MB: many entries, not a disk-filler
            return f"the first line repeated {times} times", data + first * times
        return "emptied", b""

    # -- JSON -----------------------------------------------------------------------------

    def value(self) -> tuple[str, Any]:
        """A hostile JSON value."""
        depth = self.choice([70, 1500])
        return self.choice(
            [
                (f"deep {depth}", json.loads("[" * min(depth, 600) + "]" * min(depth, 600))),
                ("huge int", 10**400),
                ("huge float", 1e308),
                ("negative", -(2**63)),
                ("null", None),
                ("list", []),
                ("object", {"unexpected": {"x": [1, 2, 3]}}),
                ("bool", True),
                ("shell text", _SHELL),
                ("outside path", "/../../../../etc/shadow"),
                ("NUL", "a\x00b"),
                ("long string", "x" * 2_000_000),
                ("empty string", ""),
            ]
        )

    def json_value(self, doc: Any) -> tuple[str, Any]:
        """``doc`` with one node replaced by a hostile value, or a key dropped or added."""
        nodes: list[tuple[Any, Any]] = []

        def walk(node: Any) -> None:
            if len(nodes) > 5000:
                return
            if isinstance(node, dict):
                for key in list(node):
                    nodes.append((node, key))
                    walk(node[key])
            elif isinstance(node, list):
                for index in range(len(node)):
                    nodes.append((node, index))
                    walk(node[index])

        walk(doc)
        if not nodes:
            name, value = self.value()
            return f"document -> {name}", value
        parent, key = self.choice(nodes)
        if isinstance(parent, dict) and self.rng.random() < 0.15:
            del parent[key]
            return f"key {key!r} dropped", doc
        name, value = self.value()
        parent[key] = value
        return f"{key!r} -> {name}", doc

    def text(self, doc: Any) -> str:
        """JSON text of ``doc``, huge numbers and NaN included (as a hostile writer could write them)."""
        return json.dumps(doc, ensure_ascii=False)

    def jsonl(self, data: bytes) -> tuple[str, bytes]:
        """A JSONL file with one line mutated (as JSON when it parses, as bytes otherwise), or as bytes whole."""
        lines = data.splitlines(keepends=True)
        if not lines or self.rng.random() < 0.25:
            return self.bytes_(data)
        index = self.rng.randrange(len(lines))
        try:
            doc = json.loads(lines[index])
        except ValueError:
            name, line = self.bytes_(lines[index])
        else:
            name, doc = self.json_value(doc)
            line = (self.text(doc) + "\n").encode("utf-8", "surrogatepass")
        lines[index] = line
        return f"line {index + 1}: {name}", b"".join(lines)

    def document(self, data: bytes) -> tuple[str, bytes]:
        """A JSON file mutated as a value (most often) or as bytes."""
        try:
            doc = json.loads(data)
        except ValueError:
            return self.bytes_(data)
        if self.rng.random() < 0.3:
            return self.bytes_(data)
        name, doc = self.json_value(doc)
        return name, self.text(doc).encode("utf-8", "surrogatepass")


def replace_node(path: Path, kind: str, canary_file: Path) -> str:
    """Replace the file ``path`` by a hostile node: a link out, a FIFO, a /dev/zero device, a huge sparse file."""
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link out":
        path.symlink_to(canary_file)
    elif kind == "folder link out":
        path.symlink_to(canary_file.parent, target_is_directory=True)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "char device":
        if os.geteuid() != 0:
            path.symlink_to("/dev/zero")  # without root: the next best thing, a link to a device
            return "link to /dev/zero (not root: no mknod)"
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))
    elif kind == "huge":
        with path.open("wb") as handle:
            handle.truncate(64 * 1024 * 1024)
    return kind


NODE_KINDS = ("link out", "folder link out", "fifo", "char device", "huge")


def cases(name: str, count: int) -> list[str]:
    return [f"{name}#{i}" for i in range(count)]


Runner = Callable[[str], None]
