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

from tests.hostgen.cache import session_snapshot
from tests.support.ram import ram_base

_UNSET: Any = object()
_FIXTURES = (Path(__file__).parent.parent / "fixtures").resolve()


def _guard(root: Path) -> None:
    if root.resolve().is_relative_to(_FIXTURES):
        raise AssertionError(f"refusing to mutate a fixture in place: {root}")


_PRISTINE: dict[tuple[Path, int], tuple[Path, list[str], list[str]]] = {}


def _scratch_base() -> Path | None:
    """/dev/shm when it has room (tests.support.ram), else the default temporary folder."""
    return ram_base()


def _scratch(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=_scratch_base()))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _pristine_files(source: Path) -> tuple[Path, list[str], list[str]]:
    """A private, read-only copy of ``source/files`` made once per test session (on the scratch
    file system), with its folders and files listed, so that light copies hard-link into it and
    never into tests/fixtures, whatever a careless test does. A snapshot the session generated
    (tests/hostgen/cache.py) is private and read-only already: its own files are linked."""
    base = _scratch_base()
    key = (source.resolve(), os.stat(base or tempfile.gettempdir()).st_dev)
    if key not in _PRISTINE:
        if session_snapshot(key[0]):
            files_root = key[0] / "files"
        else:
            files_root = _scratch("rigaudit-pristine-") / "files"
            shutil.copytree(key[0] / "files", files_root, symlinks=True)
        _PRISTINE[key] = (files_root, *_listing(files_root, read_only=files_root != key[0] / "files"))
    return _PRISTINE[key]


def _listing(files_root: Path, *, read_only: bool) -> tuple[list[str], list[str]]:
    """The folders and files under ``files_root`` (paths from it, each with a leading ``/``), its files made
    read-only when ``read_only``."""
    dirs: list[str] = []
    files: list[str] = []
    root = str(files_root)
    for folder, _, names in os.walk(root):
        relative = folder[len(root) :]
        if relative:
            dirs.append(relative)
        for name in names:
            files.append(f"{relative}/{name}")
            if read_only:
                os.chmod(f"{folder}/{name}", 0o444)
    return dirs, files


def light_copy(source: Path, target: Path) -> Path:
    """A fast copy of a snapshot (tens of milliseconds instead of seconds): a real snapshot whose
    ``files/`` are hard links into a read-only pristine copy of ``source/files`` shared by the
    test session (a snapshot never holds symbolic links: rigaudit refuses to follow them).

    It lives on the scratch file system (RAM where there is one); ``target`` is a link to it
    unless it is on that file system already. The helpers of this module give a file its own copy
    before they change it: anything else that writes a file of the copy in place must call
    :func:`materialize` on it first (rigaudit's own writes replace files, which is safe).
    """
    pristine, dirs, files = _pristine_files(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.stat(target.parent).st_dev == os.stat(pristine).st_dev:
        home = target
    else:
        store = Path(tempfile.mkdtemp(prefix="rigaudit-light-", dir=pristine.parent.parent))
        _LIVE.append(store)
        home = store / "snap"
    home.mkdir()
    for item in source.iterdir():
        if item.is_file():
            shutil.copy2(item, home / item.name)
    out, src = str(home / "files"), str(pristine)
    os.mkdir(out)
    for folder in dirs:
        os.mkdir(out + folder)
    for name in files:
        os.link(src + name, out + name)
    if home != target:
        target.symlink_to(home, target_is_directory=True)
    return target


_LIVE: list[Path] = []
"""Light copies kept on the scratch file system for a ``target`` elsewhere, oldest first."""


def live_copies() -> int:
    return len(_LIVE)


def release_light_copies(since: int) -> None:
    """Remove the light copies made after the first ``since`` (a test's own, once it is over)."""
    while len(_LIVE) > since:
        shutil.rmtree(_LIVE.pop(), ignore_errors=True)


atexit.register(release_light_copies, 0)


@contextmanager
def ram_dir(fallback: Path) -> Iterator[Path]:
    """A scratch folder in RAM (/dev/shm) when it has room, else ``fallback``.

    Creating thousands of small files or links costs about a millisecond each on some disks.
    """
    shm = ram_base()
    if shm is None:
        yield fallback
        return
    scratch = Path(tempfile.mkdtemp(prefix="rigaudit-test-", dir=shm))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def materialize(root: Path, path: str) -> Path:
    """The mirror of ``path`` in the snapshot ``root``, made safe to change in place: a file shared
    with the pristine copy of a :func:`light_copy` (a hard link) becomes a private copy. A no-op
    on an ordinary copy; a folder is returned as it is (its files are each materialized on change).
    """
    _guard(root)
    current = root / "files" / path.lstrip("/")
    try:
        st = current.lstat()
    except FileNotFoundError:
        return current
    if current.is_file() and not current.is_symlink() and st.st_nlink > 1:
        data = current.read_bytes()
        current.unlink()
        current.write_bytes(data)
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


def unlist_tree(root: Path, path: str) -> None:
    """Make the host folder ``path`` one that could not be listed: its files gone, and no entry under it recorded
    anywhere (a folder, a link, an unreadable file)."""
    remove_tree(root, path)

    def under(entry: str) -> bool:
        return entry == path or entry.startswith(f"{path}/")

    _edit_json(root, "dirs.json", [], lambda dirs: [d for d in dirs if not under(d)])
    _edit_json(root, "links.json", {}, lambda links: {k: v for k, v in links.items() if not under(k)})
    _edit_json(root, "unreadable.json", {}, lambda entries: {k: v for k, v in entries.items() if not under(k)})


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
