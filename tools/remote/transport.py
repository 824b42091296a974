"""How a command reaches a node: OpenSSH (the user's own configuration applies), or a stand-in.

The command a node runs is a POSIX ``sh`` script (:func:`node_script`): it announces how it will
collect (``RIGAUDIT-NODE installed|server|missing`` on a line of its own), then either streams
``rigaudit snapshot --stdout`` (a gzip'd tar of the snapshot directory) or starts the node server
with the node's ``python3``. The script has no single quote, so it survives any login shell as
one ``sh -c '...'`` word.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.remote.payload import bootstrap_command

Collector = Literal["auto", "installed", "server"]
COLLECTORS: tuple[Collector, ...] = ("auto", "installed", "server")
MARK = "RIGAUDIT-NODE"
_SAFE_WORD = re.compile(r"[A-Za-z0-9_./+:=@%-]+")
_DESTINATION = re.compile(r"[^\s'\"`$;&|<>()\\]+")


class TransportError(UsageError):
    """A target or option that cannot be used safely; the message is one line."""


def check_words(command: str, what: str) -> list[str]:
    words = command.split()
    if not words or not all(_SAFE_WORD.fullmatch(w) for w in words):
        raise TransportError(f"{what} {command!r}: use plain words (letters, digits, _ . / + : = @ % -)")
    return words


def node_script(collector: Collector = "auto", *, rigaudit: str = "rigaudit", python: str = "python3") -> str:
    """The node's side of one collection, as one line of ``sh``."""
    rig = check_words(rigaudit, "node rigaudit command")
    py = check_words(python, "node python command")
    installed = f"if command -v {rig[0]} >/dev/null 2>&1; then echo {MARK} installed; exec {' '.join(rig)} snapshot --stdout; fi"
    server = f"if command -v {py[0]} >/dev/null 2>&1; then echo {MARK} server; exec {bootstrap_command(' '.join(py))}; fi"
    steps = {"auto": [installed, server], "installed": [installed], "server": [server]}[collector]
    return "; ".join([*steps, f"echo {MARK} missing; exit 127"])


def check_target(target: str) -> str:
    """An SSH destination as the user wrote it (``host``, ``user@host``, ``ssh://user@host:2222``)."""
    if not target or target.startswith("-") or not _DESTINATION.fullmatch(target):
        raise TransportError(f"{target!r} is not a usable host name")
    return target


class Transport(Protocol):
    """Turns (target, node command) into the argv of a local process whose stdio reaches the node."""

    def argv(self, target: str, script: str) -> list[str]: ...

    def source(self, target: str) -> str: ...


class SshTransport(Record):
    """The OpenSSH client: ``BatchMode`` (never a password prompt), a connect timeout, keepalives.

    ``~/.ssh/config``, the ssh-agent, ``ProxyJump`` and ``known_hosts`` apply as for any ``ssh`` the user
    runs; ``config`` passes ``-F`` (tests), ``options`` adds ``-o`` settings, ``command`` replaces
    the program (a wrapper such as ``ip netns exec NS ssh``).
    """

    command: Sequence[str] = ("ssh",)
    config: Path | None = None
    options: Sequence[str] = ()
    connect_timeout_s: int = 10

    def argv(self, target: str, script: str) -> list[str]:
        check_target(target)
        argv = [*self.command, "-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, self.connect_timeout_s)}"]
        argv += ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        for option in self.options:
            argv += ["-o", option]
        return [*argv, "--", target, "sh -c " + shlex.quote(script)]

    def source(self, target: str) -> str:
        return f"ssh:{target}"


class ReplayTransport(Record):
    """A stand-in fleet for benchmarks and demos: each target is a local process that serves a
    prepared ``snapshot --stdout`` stream (``archives[target]``), as a node with rigaudit installed would."""

    archives: dict[str, Path] = field(default_factory=dict)

    def argv(self, target: str, script: str) -> list[str]:
        del script
        archive = self.archives.get(target)
        if archive is None:
            return ["sh", "-c", 'echo "ssh: Could not resolve hostname $0: Name or service not known" >&2; exit 255', target]
        return ["sh", "-c", f'echo {MARK} installed; exec cat "$0"', str(archive)]

    def source(self, target: str) -> str:
        return f"replay:{target}"
