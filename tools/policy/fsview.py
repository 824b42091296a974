"""What path resolution may ask of a file system: the kind of an entry, a link's target, who could change a directory.

:class:`LiveFileSystem` asks this machine (``lstat``/``readlink`` only: vetting never opens a file).
:class:`ModelFileSystem` answers from tables: with none, it is the lexical view used where the host
is not this machine (a snapshot, a remote node) and when the rules' examples are checked; tests give
it the links and kinds of a model host.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Final, Literal, Protocol

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.launch import untrusted_writer

Kind = Literal["file", "dir", "link", "char", "block", "fifo", "socket", "unknown"]

ABSENT: Final = "absent"
DENIED: Final = "denied"


class Entry(Record):
    """One looked-up name: its kind (``unknown`` where the view cannot tell)."""

    kind: Kind


Lookup = Entry | Literal["absent", "denied"]
"""An entry, or why there is none: ``absent`` (no such name), ``denied`` (not even its kind can be seen)."""


class FileSystem(Protocol):
    """The three questions resolution asks; none of them opens a file."""

    def lookup(self, path: str) -> Lookup:
        """The entry at ``path`` without following a final link (``lstat``)."""
        ...

    def readlink(self, path: str) -> str | None:
        """The target of the link at ``path``."""
        ...

    def untrusted(self, directory: str, entry: str) -> str | None:
        """Who untrusted could replace ``entry`` inside ``directory`` (``None``: nobody)."""
        ...


def _kind(mode: int) -> Kind:
    for test, kind in (
        (stat.S_ISLNK, "link"),
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "dir"),
        (stat.S_ISCHR, "char"),
        (stat.S_ISBLK, "block"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind  # type: ignore[return-value]
    return "unknown"


class LiveFileSystem:
    """This machine, seen through ``lstat`` and ``readlink``."""

    def lookup(self, path: str) -> Lookup:
        try:
            return Entry(_kind(os.lstat(path).st_mode))
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT
        except (OSError, ValueError):
            return DENIED

    def readlink(self, path: str) -> str | None:
        try:
            return os.readlink(path)
        except (OSError, ValueError):
            return None

    def untrusted(self, directory: str, entry: str) -> str | None:
        try:
            folder = os.lstat(directory)
        except (OSError, ValueError):
            return None
        try:
            below: os.stat_result | None = os.lstat(entry)
        except (OSError, ValueError):
            below = None
        return untrusted_writer(folder, entry=below)


class ModelFileSystem(Record):
    """A file system described by tables; a name in none of them exists, of unknown kind, and nobody untrusted can change it."""

    links: Mapping[str, str] = field(default_factory=dict)
    kinds: Mapping[str, Kind] = field(default_factory=dict)
    absent: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()
    writers: Mapping[str, str] = field(default_factory=dict)
    """Directory -> who untrusted can write it (``"owned by uid 1000"``)."""

    def lookup(self, path: str) -> Lookup:
        if path in self.links:
            return Entry("link")
        if path in self.denied:
            return DENIED
        if path in self.absent:
            return ABSENT
        return Entry(self.kinds.get(path, "unknown"))

    def readlink(self, path: str) -> str | None:
        return self.links.get(path)

    def untrusted(self, directory: str, entry: str) -> str | None:
        return self.writers.get(directory)


KERNEL_LINKS: dict[str, str] = {
    "/dev/fd": "/proc/self/fd",
    "/dev/stdin": "/proc/self/fd/0",
    "/dev/stdout": "/proc/self/fd/1",
    "/dev/stderr": "/proc/self/fd/2",
    "/dev/core": "/proc/kcore",
    "/proc/mounts": "self/mounts",
    "/proc/net": "self/net",
}
"""Links every Linux host has (udev/devtmpfs and procfs make them), so even the lexical view follows them."""

LEXICAL = ModelFileSystem(links=KERNEL_LINKS)
"""No links but the kernel's own: paths are vetted as written, ``..`` collapsed, ``/proc`` magic links understood."""
LIVE = LiveFileSystem()

EXAMPLE_HOST = ModelFileSystem(
    links={
        **KERNEL_LINKS,
        "/etc/mtab": "../proc/self/mounts",
        "/etc/alternatives/cuda": "/usr/local/cuda-12.8",
        "/var/log/gpu-report": "/root/.ssh/id_rsa",
    },
    kinds={
        "/dev/sda": "block",
        "/dev/nvme0n1": "block",
        "/dev/tty1": "char",
        "/dev/null": "char",
        "/run/app.sock": "socket",
        "/etc/default/grub": "file",
        "/etc/kernel/cmdline": "file",
    },
    writers={"/var/log/app": "owned by uid 1000", "/home/alice": "owned by uid 1000"},
)
"""The model host the rules' examples are vetted on: a few links, device nodes and a user-owned log directory."""
