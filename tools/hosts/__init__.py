"""Hosts: the one interface through which evidence is read and changes are made."""

from rigaudit.tools.hosts.base import (
    CommandResult,
    DirResult,
    FileResult,
    Host,
    HostWriteError,
    NvmlResult,
)

__all__ = ["CommandResult", "DirResult", "FileResult", "Host", "HostWriteError", "NvmlResult"]
