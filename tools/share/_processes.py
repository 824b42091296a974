"""The processes a share bundle keeps: the servers' and GPU users' command lines and environments, a count of the rest.

The audit reads the command line and environment of inference servers and their workers (a command line that names
a server, :data:`SERVER_MARKERS`), of the processes NVML lists on a GPU, and PID 1's environment (what runs the
machine: ``container=``). Those stay, redacted as every file is. Any other process keeps only its program's base
name as its command line (``/usr/sbin/cron -f -P`` becomes ``cron``, as its ``comm`` already says), and its
environment is left out; both are counted.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.server_argv import argv_words, server_marker
from rigaudit.tools.redact import REDACTED

PROCESS_FILE = re.compile(r"^/proc/(\d+)(?:/task/\d+)?/(cmdline|environ)$")
GPU_PROCESS_CALLS = frozenset(
    {
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses",
        "nvmlDeviceGetMPSComputeRunningProcesses",
    }
)
_ALWAYS = frozenset({1})
"""PID 1: the audit reads its environment to tell a container or VM."""
_MARKER = REDACTED.encode()


class ProcessCounts(Record, frozen=False):
    kept: int = 0
    """Serving and GPU processes (and PID 1): command line and environment kept."""
    others: int = 0
    """Other processes: their program's name kept, their environment left out."""
    environments_left_out: int = 0
    dropped_markers: int = 0
    """``<redacted>`` markers the snapshot held in what was left out (not in the bundle, so not counted as in it)."""


def gpu_pids(nvml: list[dict[str, object] | str]) -> set[int]:
    """The processes NVML lists on a GPU."""
    pids: set[int] = set()
    for record in nvml:
        if isinstance(record, dict) and record.get("fn") in GPU_PROCESS_CALLS and isinstance(record.get("result"), list):
            result: list[object] = record["result"]  # type: ignore[assignment]
            pids.update(p["pid"] for p in result if isinstance(p, dict) and isinstance(p.get("pid"), int))
    return pids


def _words(data: bytes) -> list[str]:
    """A command line's words as the audit reads them (:func:`rigaudit.agents.facts.processes.split_cmdline`)."""
    return [w.decode("utf-8", "replace") for w in argv_words(data)]


def needed_pids(files: Mapping[str, bytes], nvml: list[dict[str, object] | str]) -> set[int]:
    """PIDs whose command line and environment a bundle keeps: on a GPU, naming a server, or PID 1."""
    keep = gpu_pids(nvml) | _ALWAYS
    for path, data in files.items():
        match = PROCESS_FILE.match(path)
        if match and match.group(2) == "cmdline" and server_marker(_words(data)) is not None:
            keep.add(int(match.group(1)))
    return keep


class Processes:
    """Lessens the process files of one tree: ``keep`` are the PIDs kept whole."""

    def __init__(self, keep: set[int]) -> None:
        self.keep = keep
        self.counts = ProcessCounts()

    def file(self, path: str, data: bytes) -> bytes | None:
        """A file as the bundle holds it: unchanged, a command line cut to its program, or None (left out)."""
        match = PROCESS_FILE.match(path)
        if match is None:
            return data
        pid, name = int(match.group(1)), match.group(2)
        task = "/task/" in path
        if pid in self.keep:
            self.counts.kept += name == "cmdline" and not task
            return data
        if name == "environ":
            self.counts.environments_left_out += not task
            self.counts.dropped_markers += data.count(_MARKER)
            return None
        self.counts.others += not task
        words = data.split(b"\x00")
        first = words[0].split()[0] if words[0].split() else b""
        program = posixpath.basename(first)
        self.counts.dropped_markers += data.count(_MARKER) - program.count(_MARKER)
        return program + b"\x00" if program else b""
