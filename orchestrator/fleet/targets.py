"""``--hosts FILE|host1,host2``: the SSH destinations of a fleet."""

from __future__ import annotations

from pathlib import Path

from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.bounded import read_regular
from rigaudit.tools.remote.transport import TransportError, check_target


def parse_hosts(value: str) -> list[str]:
    """A comma-separated list, or a file with one destination a line (``#`` comments, blank lines ignored).

    A destination is what ``ssh`` takes: ``gpu-7``, ``root@gpu-7``, ``ssh://admin@gpu-7:2222``, or a
    ``Host`` alias of ``~/.ssh/config``. Duplicates are dropped, order kept.
    """
    path = Path(value)
    if "," not in value and path.is_file():
        try:
            text = read_regular(path, limit=16 * 1024 * 1024, what=f"--hosts {value}").decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"--hosts {value}: cannot read (not UTF-8 text)") from None
        entries = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        where = f"--hosts {value}"
    else:
        if "," not in value and ("/" in value or value.endswith((".txt", ".list", ".hosts"))):
            raise UsageError(f"--hosts {value}: no such file")
        entries = [part.strip() for part in value.split(",")]
        where = "--hosts"
    hosts: list[str] = []
    for entry in entries:
        if not entry:
            continue
        if len(entry.split()) > 1:
            raise UsageError(f"{where}: {entry!r}: one destination per line")
        try:
            hosts.append(check_target(entry))
        except TransportError as exc:
            raise UsageError(f"{where}: {exc}") from None
    hosts = list(dict.fromkeys(hosts))
    if not hosts:
        raise UsageError(f"{where}: no hosts given")
    return hosts
