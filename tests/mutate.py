"""Helpers that mutate a *copy* of a snapshot (``seed_copy``) to build test scenarios.

Every helper takes the snapshot root and edits it in place; never point them at tests/fixtures.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_UNSET: Any = object()
_FIXTURES = (Path(__file__).parent / "fixtures").resolve()


def _guard(root: Path) -> None:
    if root.resolve().is_relative_to(_FIXTURES):
        raise AssertionError(f"refusing to mutate a fixture in place: {root}")


_PRISTINE: dict[Path, Path] = {}


def _pristine_files(source: Path) -> Path:
    """A private copy of ``source/files`` made once per test session, so that light copies link
    into it and never into tests/fixtures, whatever a careless test does."""
    key = source.resolve()
    if key not in _PRISTINE:
        shm = Path("/dev/shm")
        in_ram = shm.is_dir() and os.access(shm, os.W_OK)
        cache = Path(tempfile.mkdtemp(prefix="rigaudit-pristine-", dir=shm if in_ram else None))
        atexit.register(shutil.rmtree, cache, True)
        shutil.copytree(key / "files", cache / "files", symlinks=True)
        _PRISTINE[key] = cache / "files"
    return _PRISTINE[key]


def light_copy(source: Path, target: Path) -> Path:
    """A fast copy-on-write copy of a snapshot (milliseconds after the first, instead of seconds).

    The JSON files are copied; ``files/`` holds symbolic links into a pristine copy of
    ``source/files`` shared by the test session. The helpers of this module replace the links along
    a path by real folders and files before they change it: anything else that changes the copy
    must call :func:`materialize` on the path first (``shutil.rmtree(materialize(root, path))``).
    """
    files = _pristine_files(source)
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file():
            shutil.copy2(item, target / item.name)
    (target / "files").mkdir()
    for child in files.iterdir():
        (target / "files" / child.name).symlink_to(child)
    return target


@contextmanager
def ram_dir(fallback: Path) -> Iterator[Path]:
    """A scratch folder in RAM (/dev/shm) when there is one, else ``fallback``.

    Creating thousands of small files or links costs about a millisecond each on some disks.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield fallback
        return
    scratch = Path(tempfile.mkdtemp(prefix="rigaudit-test-", dir=shm))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def materialize(root: Path, path: str) -> Path:
    """Make the mirror of ``path`` (and the folders above it) real in a :func:`light_copy`; returns it.

    A no-op on an ordinary copy. Folders become real folders of links; the file itself a real copy.
    """
    _guard(root)
    current = root / "files"
    for part in Path(path.lstrip("/")).parts:
        current = current / part
        if not current.is_symlink():
            continue
        source = current.resolve()
        current.unlink()
        if source.is_dir():
            current.mkdir()
            for child in source.iterdir():
                (current / child.name).symlink_to(child)
        elif source.exists():
            shutil.copy2(source, current)
    return current


def set_file(root: Path, path: str, content: str | bytes) -> None:
    """Create or replace the host file ``path`` (absolute) in the snapshot's files/ mirror."""
    _guard(root)
    target = materialize(root, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode() if isinstance(content, str) else content)


def remove_file(root: Path, path: str) -> None:
    """Delete the host file ``path`` from the mirror (it then reads as ENOENT)."""
    _guard(root)
    materialize(root, path).unlink(missing_ok=True)


def remove_tree(root: Path, path: str) -> None:
    """Delete the host folder ``path`` and everything under it from the mirror."""
    _guard(root)
    target = materialize(root, path)
    if target.is_dir():
        shutil.rmtree(target)  # a real folder (of links at most): the links go, never their targets


def _edit_json(root: Path, name: str, default: Any, edit: Callable[[Any], Any]) -> None:
    _guard(root)
    target = root / name
    value = json.loads(target.read_text()) if target.exists() else default
    target.write_text(json.dumps(edit(value), indent=1))


def add_dir(root: Path, path: str) -> None:
    """Record an (empty) directory in dirs.json."""
    _edit_json(root, "dirs.json", [], lambda dirs: sorted({*dirs, path}))


def set_link(root: Path, path: str, target: str) -> None:
    """Record a symbolic link in links.json."""
    _edit_json(root, "links.json", {}, lambda links: {**links, path: target})


def remove_link(root: Path, path: str) -> None:
    """Drop a symbolic link from links.json (readlink then returns nothing)."""
    _edit_json(root, "links.json", {}, lambda links: {k: v for k, v in links.items() if k != path})


def set_unreadable(root: Path, path: str, errno: str = "EACCES") -> None:
    """Record a file that exists but cannot be read."""
    _edit_json(root, "unreadable.json", {}, lambda entries: {**entries, path: errno})


def _read_jsonl(target: Path) -> list[dict[str, Any]]:
    if not target.exists():
        return []
    return [json.loads(line) for line in target.read_text().splitlines() if line.strip()]


def _write_jsonl(target: Path, records: list[dict[str, Any]]) -> None:
    target.write_text("".join(json.dumps(r) + "\n" for r in records))


def set_nvml(root: Path, fn: str, args: Sequence[int], result: Any = _UNSET, *, error: str | None = None) -> None:
    """Replace (or add) the record of one NVML call: its ``result``, or its ``error`` name."""
    _guard(root)
    target = root / "nvml.jsonl"
    record: dict[str, Any] = {"fn": fn, "args": list(args)}
    if error is not None:
        record["error"] = error
    elif result is not _UNSET:
        record["result"] = result
    records = [r for r in _read_jsonl(target) if not (r.get("fn") == fn and r.get("args", []) == list(args))]
    _write_jsonl(target, [record, *records])


def remove_nvml(root: Path, fn: str, args: Sequence[int] | None = None) -> None:
    """Drop the records of ``fn`` (all of them, or only those with ``args``): they read as not recorded."""
    _guard(root)
    target = root / "nvml.jsonl"
    kept = [r for r in _read_jsonl(target) if not (r.get("fn") == fn and (args is None or r.get("args", []) == list(args)))]
    _write_jsonl(target, kept)


def set_command(
    root: Path,
    argv: Sequence[str],
    stdout: str = "",
    *,
    exit_code: int | None = 0,
    stderr: str = "",
    error: str | None = None,
    any_args: bool = False,
) -> None:
    """Replace (or add) the record of a command. ``error``: not_found, denied, timeout..."""
    _guard(root)
    target = root / "commands.jsonl"
    record: dict[str, Any] = {"argv": list(argv)}
    if any_args:
        record["any_args"] = True
    if error is not None:
        record["error"] = error
    else:
        record.update({"exit_code": exit_code, "stdout": stdout, "stderr": stderr, "duration_s": 0.01})

    def same(r: dict[str, Any]) -> bool:
        if any_args:
            return bool(r.get("any_args")) and r.get("argv", [None])[:1] == list(argv)[:1]
        return not r.get("any_args") and r.get("argv") == list(argv)

    records = [r for r in _read_jsonl(target) if not same(r)]
    _write_jsonl(target, [record, *records])


def remove_command(root: Path, program: str) -> None:
    """Drop every record of ``program`` (exact and any_args): it reads as not recorded."""
    _guard(root)
    target = root / "commands.jsonl"
    _write_jsonl(target, [r for r in _read_jsonl(target) if r.get("argv", [None])[:1] != [program]])


def set_nvml_many(root: Path, records: Sequence[tuple[str, Sequence[int], Any]]) -> None:
    """Replace (or add) many NVML records at once: ``(fn, args, result)``; a result ``{"error": NAME}`` sets an error."""
    _guard(root)
    target = root / "nvml.jsonl"
    keys = {(fn, tuple(args)) for fn, args, _ in records}
    kept = [r for r in _read_jsonl(target) if (r.get("fn"), tuple(r.get("args", []))) not in keys]
    new = []
    for fn, args, result in records:
        record: dict[str, Any] = {"fn": fn, "args": list(args)}
        if isinstance(result, dict) and set(result) == {"error"}:
            record["error"] = result["error"]
        else:
            record["result"] = result
        new.append(record)
    _write_jsonl(target, [*new, *kept])


def add_process(
    root: Path,
    pid: int,
    argv: Sequence[str],
    *,
    comm: str | None = None,
    environ: dict[str, str] | None = None,
    ppid: int = 1,
    cgroup: str = "0::/system.slice/inference.service\n",
    mnt_ns: str | None = None,
    files: dict[str, str | bytes] | None = None,
) -> None:
    """Record a process under /proc/PID: comm, cmdline, stat, cgroup, environ, the ns/mnt link, extra files.

    ``files`` maps names under /proc/PID (``limits``, ``maps``, ``mounts``...) to their content.
    """
    base = f"/proc/{pid}"
    name = comm if comm is not None else (argv[0].rsplit("/", 1)[-1] if argv else "?")
    set_file(root, f"{base}/comm", name[:15] + "\n")
    set_file(root, f"{base}/cmdline", b"".join(a.encode() + b"\x00" for a in argv))
    set_file(root, f"{base}/stat", f"{pid} ({name[:15]}) S {ppid} {pid} {pid} 0 -1\n")
    set_file(root, f"{base}/cgroup", cgroup)
    if environ is not None:
        set_file(root, f"{base}/environ", b"".join(f"{k}={v}".encode() + b"\x00" for k, v in environ.items()))
    if mnt_ns is not None:
        set_link(root, f"{base}/ns/mnt", mnt_ns)
    for rel, content in (files or {}).items():
        set_file(root, f"{base}/{rel}", content)


def remove_unreadable(root: Path, path: str) -> None:
    """Forget that ``path`` was unreadable (then it reads from the mirror, or as ENOENT)."""
    _edit_json(root, "unreadable.json", {}, lambda entries: {k: v for k, v in entries.items() if k != path})
