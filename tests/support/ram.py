"""Where tests write many small files: /dev/shm when it has room, else the default temporary folder.

Creating thousands of small files or links costs about a millisecond each on some disks, microseconds in
RAM; but /dev/shm is shared by every test run on the machine, and its bytes and inodes run out, so it is
used only while a run's worth of both is free.
"""

from __future__ import annotations

import os
from pathlib import Path

SHM = Path("/dev/shm")
NEEDS = (1 << 30, 600_000)
"""What one test session writes there at most (bytes; files and folders), with a margin."""


def ram_base() -> Path | None:
    """/dev/shm when it is writable and has room for a session, else ``None`` (the default temporary folder)."""
    try:
        if not (SHM.is_dir() and os.access(SHM, os.W_OK)):
            return None
        free = os.statvfs(SHM)
    except OSError:
        return None
    roomy = free.f_bavail * free.f_frsize >= NEEDS[0] and (free.f_files == 0 or free.f_favail >= NEEDS[1])
    return SHM if roomy else None
