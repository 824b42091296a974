"""What a command runs with: its program, found only in the system directories; a fixed environment; ``/`` as cwd.

Nothing of the caller's environment decides what runs or what it loads: ``PATH`` is fixed to the
system directories (a planted ``uname`` in ``~/bin`` is never run), and the environment is built
from an allow-list (``LANG``/``LC_ALL`` = ``C``, a valid ``TZ``, ``HOME`` of the effective user, and
the settings that keep tools plain: no pager, no colour), so ``LD_PRELOAD``, ``LD_LIBRARY_PATH``,
``PYTHONPATH``, tokens and everything else stay behind. A program named without a slash is looked
up in the system directories only, and run only when neither it nor its directory can be changed
by someone the user does not trust (see :func:`untrusted_writer`). The working directory is ``/``,
so a relative path means what the policy judged it to mean.

Standard library only: the node server (``rigaudit.tools.remote``) ships this module to nodes.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.hosts.base import CommandResult

SYSTEM_PATH: tuple[str, ...] = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The only directories a program is looked up in, in this order (the Debian root ``PATH``)."""

WORKING_DIRECTORY = "/"

FIXED_ENVIRONMENT: dict[str, str] = {
    "LANG": "C",
    "LC_ALL": "C",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "SYSTEMD_PAGER": "",
    "SYSTEMD_COLORS": "0",
    "PYTHONNOUSERSITE": "1",
}
"""Always set: plain C output, no pager, no colour, no user site-packages for Python tools (lsb_release)."""

SYSTEM_ID_MAX = 999
"""User and group ids up to this are system accounts (``SYS_UID_MAX`` in login.defs)."""
_NOBODY = 65534
_TZ = r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*|[A-Z]{3,5}[+-]?[0-9]{1,2}(?:[A-Z]{3,5})?"


def trusted_id(number: int, own: int) -> bool:
    """Root, the effective user (or group) itself, or a system account: nobody else may change what runs or is read."""
    return number in (0, own) or (0 < number <= SYSTEM_ID_MAX and number != _NOBODY)


def untrusted_writer(info: os.stat_result, *, entry: os.stat_result | None = None) -> str | None:
    """Who untrusted could change this file or directory (``None``: only trusted users can).

    For a directory, ``entry`` is the entry looked up in it: a world-writable sticky directory
    (``/tmp``) protects an entry only from users other than the entry's owner.
    """
    uid, gid = os.geteuid(), os.getegid()
    if not trusted_id(info.st_uid, uid):
        return f"owned by uid {info.st_uid}"
    if info.st_mode & stat.S_IWGRP and not trusted_id(info.st_gid, gid):
        return f"writable by group {info.st_gid}"
    if info.st_mode & stat.S_IWOTH:
        sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        if not sticky:
            return "writable by everyone"
        if entry is not None and not trusted_id(entry.st_uid, uid):
            return f"in a shared directory, owned by uid {entry.st_uid}"
    return None


def home_directory() -> str:
    """The effective user's home from the password database (never an inherited ``HOME``)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir or "/"
    except (KeyError, OSError):
        return "/"


def command_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment commands run with, built from an allow-list; ``base`` (default: ours) only lends ``TZ``."""
    source = os.environ if base is None else base
    env = {"PATH": ":".join(SYSTEM_PATH), "HOME": home_directory(), **FIXED_ENVIRONMENT}
    zone = source.get("TZ", "")
    if zone and re.fullmatch(_TZ, zone) and ".." not in zone:
        env["TZ"] = zone
    return env


class ProgramError(OperationError):
    """A program that is not run: not in the system directories, or changeable by someone untrusted."""

    def __init__(self, message: str, *, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


def _executable(path: str) -> os.stat_result | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info if stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK) else None


def _elsewhere(name: str, inherited: str) -> str | None:
    for directory in inherited.split(":"):
        if directory and directory not in SYSTEM_PATH and _executable(os.path.join(directory, name)) is not None:
            return os.path.join(directory, name)
    return None


def _trust_problem(path: str, info: os.stat_result) -> str | None:
    """Why the program at ``path`` (found by name) could be swapped by someone untrusted, or ``None``."""
    if (why := untrusted_writer(info)) is not None:
        return f"{path} is {why}"
    real = os.path.realpath(path)
    for directory, entry in ((os.path.dirname(path), path), (os.path.dirname(real), real)):
        try:
            folder, below = os.stat(directory or "/"), os.lstat(entry)
        except OSError:
            continue
        if (why := untrusted_writer(folder, entry=below)) is not None:
            return f"its directory {directory} is {why}"
    return None


def resolve_program(program: str, inherited_path: str | None = None) -> str:
    """The absolute path a program runs from; raises :class:`ProgramError` (one line) when it is not run.

    A bare name is looked up in :data:`SYSTEM_PATH` only (``inherited_path``, default ours, only
    names where else it was seen); an absolute path is the caller's explicit choice; a relative
    path with a slash depends on a working directory and is refused.
    """
    if not program:
        raise ProgramError("empty program name", not_found=False)
    if program.startswith("/"):
        return program
    if "/" in program:
        raise ProgramError(f"{program}: a relative program path is not run (name it, or its absolute path)", not_found=False)
    for directory in SYSTEM_PATH:
        candidate = os.path.join(directory, program)
        info = _executable(candidate)
        if info is None:
            continue
        if (problem := _trust_problem(candidate, info)) is not None:
            raise ProgramError(f"{program}: not run: {problem}", not_found=False)
        return candidate
    where = _elsewhere(program, os.environ.get("PATH", "") if inherited_path is None else inherited_path)
    seen = f"; {where} is not run: rigaudit runs programs from the system directories only" if where else ""
    raise ProgramError(f"{program}: no such program in {':'.join(SYSTEM_PATH)}{seen}", not_found=True)


def spawn_options() -> dict[str, Any]:
    """How every vetted command starts (``subprocess.Popen`` or ``anyio.open_process``): no input, its output
    piped, in :data:`WORKING_DIRECTORY` with :func:`command_environment`, in a session of its own (its group is
    killed whole)."""
    return {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "cwd": WORKING_DIRECTORY,
        "env": command_environment(),
        "start_new_session": True,
    }


def launch_argv(argv: Sequence[str]) -> list[str] | CommandResult:
    """The argv to execute (its program resolved to an absolute path), or the result of not starting it."""
    key = tuple(argv)
    if not key or any("\x00" in a for a in key):
        return CommandResult(key, error="failed_to_start", stderr="invalid argv")
    try:
        program = resolve_program(key[0])
    except ProgramError as exc:
        return CommandResult(key, error="not_found" if exc.not_found else "failed_to_start", stderr=str(exc))
    return [program, *key[1:]]
