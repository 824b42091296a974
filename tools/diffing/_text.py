"""Compact descriptions of how two values differ: ``old -> new``, one unified-diff line, ``N bytes differ``."""

from __future__ import annotations

import difflib
import json

_ONE_LINE = 80
_DIFF_LINES = 200


def is_text(data: bytes) -> bool:
    """UTF-8 without NULs, or a NUL-separated block (``/proc/PID/cmdline``, ``environ``) of UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data.rstrip(b"\x00") or data.count(b"\x00") * 8 < len(data)


def as_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\x00", " ")


def clip(text: str, limit: int = _ONE_LINE) -> str:
    text = text.replace("\n", "\\n").replace("\t", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unified(a: str, b: str, *, limit: int = _DIFF_LINES) -> list[str]:
    """The changed lines of a unified diff without context (``@@`` headers kept), at most ``limit`` lines."""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "a", "b", n=0, lineterm=""))[2:]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more diff lines"]
    return lines


def changed_lines(a: str, b: str) -> tuple[list[str], list[str]]:
    """Lines only in A and only in B (order kept), for line-level judgements."""
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(a.splitlines(), b.splitlines(), n=0, lineterm=""):
        if line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
    return removed, added


def text_detail(a: str, b: str) -> tuple[str, str]:
    """(detail, diff): ``old -> new`` for one-line values, else the first changed lines of a unified diff."""
    one_a, one_b = a.rstrip("\n"), b.rstrip("\n")
    if "\n" not in one_a and "\n" not in one_b and len(one_a) <= _ONE_LINE and len(one_b) <= _ONE_LINE:
        return f"{one_a or '(empty)'} -> {one_b or '(empty)'}", ""
    lines = unified(a, b)
    removed = [line for line in lines if line.startswith("-")]
    added = [line for line in lines if line.startswith("+")]
    header = next((line for line in lines if line.startswith("@@")), "@@")
    parts = [header.split(" @@")[0] + " @@"]
    first_a, first_b = (removed[0][1:] if removed else None), (added[0][1:] if added else None)
    start = 0
    if first_a is not None and first_b is not None:  # show where the two lines part, not their common start
        pairs = enumerate(zip(first_a, first_b, strict=False))
        common = next((i for i, (x, y) in pairs if x != y), min(len(first_a), len(first_b)))
        start = max(0, common - 24)
    for sign, line in (("-", first_a), ("+", first_b)):
        if line is not None:
            parts.append(sign + ("..." if start else "") + clip(line[start:], 60))
    more = len(removed) + len(added) - (1 if removed else 0) - (1 if added else 0)
    if more > 0:
        parts.append(f"(+{more} more changed lines)")
    return " ".join(parts), "\n".join(lines)


def bytes_detail(a: bytes, b: bytes) -> str:
    differing = sum(1 for x, y in zip(a, b, strict=False) if x != y)
    if len(a) != len(b):
        return f"{differing} bytes differ, size {len(a)} -> {len(b)}"
    return f"{differing} bytes differ"


def json_short(value: object) -> str:
    return clip(json.dumps(value, sort_keys=True, separators=(",", ":")), 60)


def json_detail(a: object, b: object) -> str:
    """Changed fields of two structs (``used 1 -> 2``), else ``old -> new`` in compact JSON."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b), key=str)
        parts = [f"{k} {json_short(a.get(k))} -> {json_short(b.get(k))}" for k in keys if a.get(k) != b.get(k)]
        if parts:
            return "; ".join(parts[:4]) + (f" (+{len(parts) - 4} more)" if len(parts) > 4 else "")
    return f"{json_short(a)} -> {json_short(b)}"
