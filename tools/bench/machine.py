"""Which machine a benchmark's load came from: a digest of its ``/etc/machine-id``, as results and calibrations keep it.

A host name does not tell machines apart (containers and cloned VMs share theirs, many are
"localhost") and changes when a host is renamed; ``/etc/machine-id`` is made at install and kept
across reboots and renames. Only ``machine-id:<16 hex digits of its SHA-256>`` is kept, the form
:mod:`rigaudit.orchestrator.identity` gives audits and reports (never the id itself). A machine
without a readable id is known by its name alone, which callers say in one line.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

MACHINE_ID = Path("/etc/machine-id")
TOKEN = r"machine-id:[0-9a-f]{16}"
"""The shape of what a result's ``host_id`` and a calibration's hold (a pattern: ``re.fullmatch(TOKEN, text)``)."""
_ID = r"[0-9a-f]{32}"


def token(raw: bytes | None) -> str:
    """``machine-id:<digest>`` of a machine-id file's content; ``""`` when it holds no id (empty, ``uninitialized``)."""
    text = (raw or b"").decode("ascii", "replace").strip().lower()
    return f"machine-id:{hashlib.sha256(text.encode()).hexdigest()[:16]}" if re.fullmatch(_ID, text) else ""


def this_machine(path: Path = MACHINE_ID) -> str:
    """The token of the machine rigaudit runs on; ``""`` when its machine-id cannot be read."""
    try:  # non-blocking, regular files only: a FIFO or a device planted there is no id, and never a hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return ""
    try:
        return token(os.read(fd, 4096)) if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    except OSError:
        return ""
    finally:
        os.close(fd)


def short(host_id: str) -> str:
    """``machine-id 1a2b3c4d`` for people; ``""`` for none."""
    return f"machine-id {host_id.removeprefix('machine-id:')[:8]}" if host_id else ""
