"""The installed rigaudit's version (recorded in snapshots, transcripts and share bundles)."""

from __future__ import annotations

import functools


@functools.cache
def rigaudit_version() -> str:
    """The installed distribution's version, ``0+unknown`` when it is not installed (looked up once a process: a
    lookup reads the installed packages' metadata, 0.2 ms, and every session records it twice)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rigaudit")
    except PackageNotFoundError:
        return "0+unknown"
