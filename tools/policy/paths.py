"""Judging the paths a command names, on the path the kernel will open.

Every path is resolved first (:mod:`.resolve`: ``..`` after links, ``/proc`` magic links, every
symlink on a live host), then vetted on its target, and never less strictly than on its text:

- ``deny``: credentials (:mod:`.secrets`); a walk through another process's root, cwd or open
  files; a loop; a resolution that someone untrusted could change before it is opened; reads with
  side effects, of process memory or of a device node not known to be safe (:mod:`.readlist`);
- ``ask``: a process environment; a read outside the allow-list (:data:`.readlist.READABLE`);
  a relative path (name an absolute one);
- otherwise the path may be read (or listed).
"""

from __future__ import annotations

import posixpath
import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.policy import readlist, secrets
from rigaudit.tools.policy.fsview import LEXICAL, LIVE, FileSystem
from rigaudit.tools.policy.resolve import Resolved, resolve
from rigaudit.tools.policy.verdict import Decision

STANDARD_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})

_PROC_PID = r"/proc/(?:\d+|self|thread-self)(?:/task/(?:\d+|self))?"
PROC_ENVIRON = _PROC_PID + r"/environ"
UNEXPANDED = r"[*?\[\]{}$]"
_HOME = r"/root(?:/.*)?|/home/[^/]+(?:/.*)?"

is_secret = secrets.is_secret
holds_secrets = secrets.holds_secrets


class PathProblem(Record):
    """Why a path may not be used as a command wants to: the decision it forces, the rule, the reason."""

    decision: Decision
    rule: str
    reason: str


def normalize(path: str) -> str:
    """Collapse ``.``, ``..`` and repeated slashes textually (``//etc`` too), without touching the host."""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def looks_like_path(arg: str) -> bool:
    return arg.startswith(("/", "~", "./", "../")) or arg in (".", "..")


def path_candidates(arg: str) -> list[str]:
    """The places an argument may name a file: itself, after ``=`` (``--file=/x``), from its first ``/`` (``-f/x``)."""
    found = [arg]
    if "=" in arg:
        found.append(arg.split("=", 1)[1])
    if "/" in arg:
        found.append(arg[arg.index("/") :])
    return found


def as_absolute(path: str) -> str:
    """An absolute, normalized form; a relative path is taken from ``/``, the working directory commands run in."""
    if path.startswith("~"):
        path = "/root" + path[1:] if path in ("~",) or path.startswith("~/") else "/home/" + path[1:]
    return normalize(path if path.startswith("/") else "/" + path)


def lexical(path: str) -> str:
    """The path as its text says, ``..`` collapsed after the kernel's own links (``/proc/self/root`` is ``/``).

    Judging it as well as the real target keeps the policy never less strict than the text.
    """
    return resolve(path if path.startswith("/") else "/" + path, LEXICAL).path


def _from(reason: str, original: str, resolved: Resolved) -> str:
    return reason if normalize(original) == resolved.path else f"{reason} (from {original})"


def _shown(original: str, resolved: Resolved) -> str:
    norm = normalize(original)
    return norm if resolved.path == norm else f"{original} (opens {resolved.path})"


def guard(path: str, fs: FileSystem = LIVE, *, follow_final: bool = True) -> PathProblem | None:
    """What naming ``path`` at all forces, wherever it appears in a command (vetted on text and target).

    ``follow_final=False`` for a program that may name a final magic link without opening it
    (``readlink /proc/1/exe``): its form then vets that link.
    """
    absolute = path if path.startswith("/") else "/" + path
    unfollowed = resolve(absolute, fs, follow_final=False)
    followed = resolve(absolute, fs)
    as_written = resolve(absolute, LEXICAL, follow_final=False)
    for walk in (as_written, unfollowed, followed) if follow_final else (as_written, unfollowed):
        if walk.refused is not None:
            return PathProblem("deny", "magic-link", _from(walk.refused, path, walk))
    resolved = unfollowed if followed.refused is not None else followed
    where = _shown(absolute, resolved)
    text = lexical(absolute)
    for candidate in (text, unfollowed.path, resolved.path):
        if secrets.is_secret(candidate):
            return PathProblem("deny", "secret-path", f"{where} holds credentials")
        if readlist.SIDE_EFFECTS.fullmatch(candidate):
            return PathProblem(
                "deny", "raw-memory", f"{where} is raw or process memory, I/O ports, the watchdog or the kernel log queue"
            )
    if resolved.unstable is not None:
        return PathProblem("deny", "unstable-path", f"{where}: {resolved.unstable}")
    if any(re.fullmatch(PROC_ENVIRON, c) for c in (text, unfollowed.path, resolved.path)):
        return PathProblem("ask", "process-environ", f"{where} is a process environment, which often holds secrets")
    return None


def _device(resolved: Resolved, where: str) -> PathProblem | None:
    path = resolved.path
    kind = resolved.kind
    if kind in ("fifo", "socket"):
        return PathProblem("deny", "device-node", f"{where} is a {kind}: reading it blocks or talks to a service")
    is_device = kind in ("char", "block") or (
        kind in ("unknown", None) and readlist.DEVICES.fullmatch(path) and not readlist.TMPFS_UNDER_DEV.fullmatch(path)
    )
    if not is_device or path == "/dev":
        return None
    if readlist.SAFE_DEVICES.fullmatch(path):
        return PathProblem("ask", "not-allow-listed", f"{where} is a device node no diagnostic needs")
    return PathProblem("deny", "device-node", f"{where} is a device node not known to be safe to read (raw disk, memory, tty...)")


def device_problem(path: str, fs: FileSystem = LIVE) -> PathProblem | None:
    """Why reading the absolute ``path`` is not reading a file: a device node, FIFO or socket, or device registers."""
    resolved = resolve(path, fs)
    where = _shown(path, resolved)
    if (problem := _device(resolved, where)) is not None:
        return problem
    if readlist.REGISTERS.fullmatch(resolved.path) or readlist.REGISTERS.fullmatch(lexical(path)):
        return PathProblem("deny", "registers", f"{where} reaches device registers or debug files (reads can have side effects)")
    return None


def _guarded(path: str, fs: FileSystem) -> Resolved | PathProblem:
    """Where an absolute ``path`` that passes the :func:`guard` leads; the problem when it is relative, guarded, or
    resolves through a magic link."""
    if not path.startswith("/"):
        return PathProblem("ask", "relative-path", f"{path!r} is relative: name an absolute path")
    if (problem := guard(path, fs)) is not None:
        return problem
    resolved = resolve(path, fs)
    if resolved.refused is not None:
        return PathProblem("deny", "magic-link", _from(resolved.refused, path, resolved))
    return resolved


def vet_read(path: str, fs: FileSystem = LIVE) -> PathProblem | None:
    """``None`` when a diagnostic may read ``path`` (a file's contents); otherwise the problem."""
    if path == "-":
        return PathProblem("ask", "not-allow-listed", "reads standard input, which is empty here")
    resolved = _guarded(path, fs)
    if isinstance(resolved, PathProblem):
        return resolved
    where = _shown(path, resolved)
    if (problem := device_problem(path, fs)) is not None:
        return problem
    target = resolved.path
    if readlist.NOT_READABLE.fullmatch(target) and not readlist.ALSO_READABLE.fullmatch(target):
        return PathProblem("ask", "not-allow-listed", f"{where} is not among the files diagnostics need")
    if not readlist.READABLE.fullmatch(target):
        return PathProblem(
            "ask",
            "not-allow-listed",
            f"{where} is not on the read allow-list (kernel state, system and NVIDIA configuration, logs)",
        )
    return None


def vet_recursive_read(path: str, fs: FileSystem = LIVE) -> PathProblem | None:
    """``None`` when the tree at ``path`` may be read whole (``grep -r``); otherwise the problem."""
    resolved = _guarded(path, fs)
    if isinstance(resolved, PathProblem):
        return resolved
    where = _shown(path, resolved)
    if any(secrets.holds_secrets(c) for c in (lexical(path), resolved.path)):
        return PathProblem(
            "deny", "grep-recursive-secrets", f"{where} holds credentials somewhere inside: search the specific directory"
        )
    if resolved.kind == "file":
        return vet_read(path, fs)  # a file searched "recursively" is a file read
    if readlist.RECURSIVE.fullmatch(resolved.path):
        return None
    return PathProblem("ask", "not-allow-listed", f"{where}: recursive reads are limited to configuration, module and log trees")


def vet_list(path: str, fs: FileSystem = LIVE, *, follow_final: bool = True, recursive: bool = False) -> PathProblem | None:
    """``None`` when ``path`` may be listed or stat'ed (``follow_final=False``: the final link itself); otherwise the problem."""
    if not path.startswith("/"):
        return PathProblem("ask", "relative-path", f"{path!r} is relative: name an absolute path")
    resolved = resolve(path, fs, follow_final=follow_final)
    if resolved.refused is not None:
        return PathProblem("deny", "magic-link", _from(resolved.refused, path, resolved))
    where = _shown(path, resolved)
    for candidate in (lexical(path), resolved.path):
        if secrets.is_secret(candidate):
            return PathProblem("deny", "secret-path", f"{where} holds credentials")
    if resolved.unstable is not None:
        return PathProblem("deny", "unstable-path", f"{where}: {resolved.unstable}")
    if any(readlist.PROCESS_FDS.fullmatch(c) for c in (lexical(path), resolved.path)):
        return PathProblem("ask", "process-fds", f"{where} is a process's open-file table (what it has open)")
    if recursive and any(readlist.ABOVE_PROCESS_FDS.fullmatch(c) for c in (lexical(path), resolved.path)):
        return PathProblem("ask", "process-fds", f"{where} holds processes' open-file tables: list a specific directory")
    if re.fullmatch(_HOME, resolved.path) and not readlist.READABLE.fullmatch(resolved.path):
        return PathProblem("ask", "home-directory", f"{where} is in a home directory, whose names can be private")
    if recursive and any(secrets.holds_secrets(c) for c in (lexical(path), resolved.path)):
        return PathProblem("ask", "recursive-listing", f"{where} holds credentials somewhere inside: list a specific directory")
    return None


def readable(path: str, fs: FileSystem = LIVE) -> str | None:
    """``None`` when ``path`` may be read by a diagnostic; otherwise why not (for callers that only refuse)."""
    problem = vet_read(path, fs)
    return None if problem is None else problem.reason


def listable(path: str, fs: FileSystem = LIVE) -> str | None:
    """``None`` when ``path`` may be listed; otherwise why not."""
    problem = vet_list(path, fs)
    return None if problem is None else problem.reason


def recursively_readable(path: str, fs: FileSystem = LIVE) -> str | None:
    """``None`` when the tree at ``path`` may be read whole; otherwise why not."""
    problem = vet_recursive_read(path, fs)
    return None if problem is None else problem.reason


def resolved_path(path: str, fs: FileSystem = LIVE) -> str:
    """Where ``path`` leads (for reading exactly what was vetted)."""
    return resolve(path if path.startswith("/") else "/" + path, fs).path
