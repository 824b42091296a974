"""The node server: answers the read half of the Host protocol over stdin/stdout.

Sent to a node that has no rigaudit (see ``payload``), it runs on the node's own ``python3 -I -S``:
the standard library, plus the synchronous primitives of :mod:`rigaudit.tools.hosts.local` and the NVML
facade's core with a vendored ``pynvml``, so files, commands and NVML are read exactly as
``rigaudit snapshot`` reads them on its own machine. The investigators and the snapshot writer run
on the coordinator, through :class:`rigaudit.tools.remote.client.RemoteHost`: no pydantic on the node.

Requests are served by a small thread pool (a slow command does not hold up sysfs reads); every
command runs in its own process group, and groups still running when the session ends are killed.
The node server writes nothing on the node.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, BinaryIO

from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.launch import launch_argv, spawn_options
from rigaudit.tools.hosts.local import (
    MAX_OUTPUT_BYTES,
    MAX_READ_BYTES,
    CappedOutput,
    finished,
    list_directory,
    read_file,
    read_link,
    start_failure,
)
from rigaudit.tools.hosts.nvml_local import NvmlFacade
from rigaudit.tools.remote import protocol

WORKERS = 16
MAX_TIMEOUT_S = 600.0


class _Running:
    """Process groups of the commands in flight, killed when the session ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pids: set[int] = set()

    def add(self, pid: int) -> None:
        with self._lock:
            self._pids.add(pid)

    def discard(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def kill_all(self) -> None:
        with self._lock:
            pids = list(self._pids)
        for pid in pids:
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _drain(stream: IO[bytes] | None, sink: CappedOutput) -> None:
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fd = stream.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            sink.add(chunk)


def run_command_sync(
    argv: Sequence[str], *, timeout_s: float, max_output: int = MAX_OUTPUT_BYTES, running: _Running | None = None
) -> CommandResult:
    """:func:`rigaudit.tools.hosts.local.run_command` without an event loop: same environment, cap, timeout and results."""
    key = tuple(argv)
    launch = launch_argv(key)
    if isinstance(launch, CommandResult):
        return launch
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            launch,
            **spawn_options(),
        )
    except OSError as exc:
        return start_failure(key, exc)
    if running is not None:
        running.add(process.pid)
    out, err = CappedOutput(max_output), CappedOutput(max_output)
    drains = [
        threading.Thread(target=_drain, args=(s, sink), daemon=True) for s, sink in ((process.stdout, out), (process.stderr, err))
    ]
    for thread in drains:
        thread.start()
    deadline = started + max(timeout_s, 0.001)
    timed_out = False
    try:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            timed_out = True
        for thread in drains:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        if timed_out or any(t.is_alive() for t in drains):
            # A grandchild holding the pipes after the command exited is not the command timing out.
            _kill_group(process.pid)
            process.wait()
            for thread in drains:
                thread.join(timeout=1.0)
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            process.wait()
        for index, stream in enumerate((process.stdout, process.stderr)):  # (no zip strict=: nodes may run 3.9)
            if stream is not None and not drains[index].is_alive():  # never close a pipe a drain still reads
                with contextlib.suppress(OSError):
                    stream.close()
        if running is not None:
            running.discard(process.pid)
    return finished(key, process.returncode, out, err, started=started, timed_out=timed_out, timeout_s=timeout_s)


def _path(request: protocol.Message) -> str:
    path = request.get("path")
    if not isinstance(path, str) or not path:
        raise ValueError("a path is required")
    return path


def _int_list(raw: object, what: str) -> list[int]:
    if not isinstance(raw, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in raw):
        raise ValueError(f"{what} must be a list of integers")
    return [int(a) for a in raw]


class NodeServer:
    """The operations, with the NVML facade this node's session owns."""

    def __init__(self, *, nvml: NvmlFacade | None = None) -> None:
        self.nvml = nvml if nvml is not None else NvmlFacade()
        self.running = _Running()

    def hello(self) -> dict[str, object]:
        return {
            "hello": protocol.PROTOCOL,
            "hostname": socket.gethostname(),
            "python": ".".join(str(v) for v in sys.version_info[:3]),
            "no_site": bool(sys.flags.no_site),
            "isolated": bool(sys.flags.isolated),
            "pydantic_loaded": "pydantic" in sys.modules,
        }

    def handle(self, request: protocol.Message) -> dict[str, object]:
        op = request.get("op")
        if op == "read":
            return protocol.encode_file(read_file(_path(request), MAX_READ_BYTES))
        if op == "list_dir":
            return protocol.encode_dir(list_directory(_path(request)))
        if op == "readlink":
            return {"target": read_link(_path(request))}
        if op == "exists":
            return {"exists": os.path.exists(_path(request))}
        if op == "run":
            argv = request.get("argv")
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise ValueError("argv must be a non-empty list of strings")
            timeout = request.get("timeout_s", 10.0)
            timeout_s = min(float(timeout), MAX_TIMEOUT_S) if isinstance(timeout, (int, float)) else 10.0
            return protocol.encode_command(run_command_sync(argv, timeout_s=timeout_s, running=self.running))
        if op == "nvml":
            fn = request.get("fn")
            if not isinstance(fn, str):
                raise ValueError("fn must be a string")
            args = tuple(_int_list(request.get("args", []), "args"))
            return protocol.encode_nvml(self.nvml._call_sync(fn, args))
        raise ValueError(f"unknown op {op!r}")

    def close(self) -> None:
        self.running.kill_all()
        with contextlib.suppress(Exception):
            self.nvml._shutdown_sync()


class _Writer:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.broken = False

    def send(self, message: dict[str, object]) -> None:
        data = protocol.dumps(message)
        with self._lock:
            if self.broken:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                self.broken = True


def serve(stdin: BinaryIO, stdout: BinaryIO, server: NodeServer | None = None, *, workers: int = WORKERS) -> int:
    """Answer requests until ``bye`` or end of input; return the exit status."""
    server = server or NodeServer()
    writer = _Writer(stdout)
    writer.send(server.hello())

    def answer(request_id: object, request: protocol.Message) -> None:
        try:
            reply = server.handle(request)
        except (ValueError, TypeError) as exc:
            reply = {"fail": str(exc) or exc.__class__.__name__}
        except Exception as exc:  # one request's bug must not end the session
            reply = {"fail": f"{exc.__class__.__name__}: {exc}"}
        writer.send({"id": request_id, **reply})

    clean = False
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rigaudit-node-server")
    try:
        for line in iter(stdin.readline, b""):
            if not line.strip():
                continue
            try:
                request = protocol.loads(line)
            except ValueError as exc:
                writer.send({"id": None, "fail": f"unreadable request: {exc}"})
                continue
            if request.get("op") == "bye":
                clean = True
                break
            pool.submit(answer, request.get("id"), request)
    finally:
        if not clean:
            server.running.kill_all()  # the coordinator is gone: stop what it asked for
        pool.shutdown(wait=True, cancel_futures=not clean)
        server.close()
    return 0


def main(argv: Sequence[str] | None = None, *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    del argv
    return serve(stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)
