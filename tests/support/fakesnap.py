"""A minimal snapshot written from a dict of files, links, NVML results and commands (for fact tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_snapshot(
    root: Path,
    files: dict[str, str | bytes],
    *,
    commands: dict[tuple[str, ...], str] | None = None,
    exists: tuple[str, ...] = (),
    links: dict[str, str] | None = None,
    dirs: tuple[str, ...] = (),
    nvml: dict[tuple[str, tuple[int, ...]], Any] | None = None,
) -> Path:
    """``exists``: paths that exist without recorded content; ``nvml``: (fn, args) -> result, or ``{"error": ...}``."""
    for path, content in files.items():
        target = root / "files" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    (root / "files").mkdir(parents=True, exist_ok=True)
    (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": "t"}))
    (root / "unreadable.json").write_text(json.dumps({p: "NOT_RECORDED" for p in exists}))
    (root / "links.json").write_text(json.dumps(links or {}))
    (root / "dirs.json").write_text(json.dumps(list(dirs)))
    lines = [{"argv": list(argv), "exit_code": 0, "stdout": out} for argv, out in (commands or {}).items()]
    (root / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    records = [{"fn": "nvmlInit", "args": []}]
    for (fn, args), value in (nvml or {}).items():
        record: dict[str, Any] = {"fn": fn, "args": list(args)}
        if isinstance(value, dict) and set(value) == {"error"}:
            record["error"] = value["error"]
        else:
            record["result"] = value
        records.append(record)
    (root / "nvml.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root
