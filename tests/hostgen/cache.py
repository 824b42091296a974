"""Archetype snapshots written once per test session (in RAM when /dev/shm is there), shared read-only."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from tests.hostgen.archetypes import ALL as ARCHETYPES
from tests.hostgen.build import Built, build
from tests.hostgen.spec import HostSpec
from tests.hostgen.tree import Tree

_ROOTS: list[Path] = []
_WRITTEN: dict[HostSpec, Path] = {}


ROOM_INODES = 1_000_000
ROOM_BYTES = 4 << 30
"""What a session may need: the archetypes and their fault variants take ~600k inodes (tmpfs counts hard links)."""


def _roomy(path: Path) -> bool:
    """``path`` has room for a session's snapshots (a /dev/shm shared by several test runs fills up)."""
    stat = os.statvfs(path)
    return stat.f_favail >= ROOM_INODES and stat.f_bavail * stat.f_frsize >= ROOM_BYTES


_PREFIX = "rigaudit-hostgen-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def sweep() -> None:
    """Remove the folders of earlier sessions killed before their exit handler ran (their process is gone).
    Run once before the tests (tests/conftest.py), never inside one: a folder holds some 400,000 files."""
    for folder in (Path("/dev/shm"), Path(tempfile.gettempdir())):
        for old in folder.glob(_PREFIX + "*"):
            pid = old.name[len(_PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(old, ignore_errors=True)


def scratch() -> Path:
    """A session folder for generated snapshots (named by this process, so a killed run's is swept), removed at exit."""
    if not _ROOTS:
        shm = Path("/dev/shm")
        in_ram = shm.is_dir() and os.access(shm, os.W_OK) and _roomy(shm)
        _ROOTS.append(Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=shm if in_ram else None)))
        atexit.register(shutil.rmtree, _ROOTS[0], True)
    return _ROOTS[0]


def session_snapshot(path: Path) -> bool:
    """``path`` is a snapshot this session wrote (under its folder): shared and read-only."""
    return bool(_ROOTS) and path.resolve().is_relative_to(_ROOTS[0].resolve())


def snapshot(spec: HostSpec) -> Path:
    """The snapshot of ``spec``, written on first use. Read only: copy it (tests/mutate.light_copy) to change it.

    A fault variant (``faults.*`` names it ``archetype+fault``) shares, by hard links, the files it has in common
    with its archetype's snapshot; any other host, with a written snapshot of the same CPU or OS (``_kin``).
    """
    if spec not in _WRITTEN:
        base = ARCHETYPES.get(spec.name.split("+", 1)[0])
        like = (built(base).tree, snapshot(base)) if base is not None and base != spec else None  # the base's folder first
        target = scratch() / f"{len(_WRITTEN):03d}-{spec.name.replace('+', '_')}"
        if like is not None:
            _WRITTEN[spec] = built(spec).tree.write(target, like=like)
        else:
            tree = built(spec).tree if spec in ARCHETYPES.values() else build(spec).tree
            _WRITTEN[spec] = tree.write(target, like=_kin(spec))
            _KIN.setdefault((spec.cpu, spec.os), (tree, _WRITTEN[spec]))
    return _WRITTEN[spec]


_KIN: dict[tuple[object, object], tuple[Tree, Path]] = {}
"""A written snapshot and its tree for each CPU and OS: what a host no archetype names shares files with."""


def _kin(spec: HostSpec) -> tuple[Tree, Path] | None:
    """The written snapshot of the same CPU and OS, else of the same CPU, else of the same OS (their files are most of
    a tree), to hard-link the files with the same bytes instead of writing them; None while there is none."""
    for alike in ((spec.cpu, spec.os), (spec.cpu, None), (None, spec.os)):
        for (cpu, os_), kin in _KIN.items():
            if alike[0] in (None, cpu) and alike[1] in (None, os_):
                return kin
    return None


_BUILT: dict[HostSpec, Built] = {}


def built(spec: HostSpec) -> Built:
    """The in-memory build of ``spec``, made once per session. Read only."""
    if spec not in _BUILT:
        _BUILT[spec] = build(spec)
    return _BUILT[spec]
