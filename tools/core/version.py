"""The installed rigaudit's version (recorded in snapshots, transcripts and share bundles)."""

from __future__ import annotations


def rigaudit_version() -> str:
    """The installed distribution's version, ``0+unknown`` when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rigaudit")
    except PackageNotFoundError:
        return "0+unknown"
