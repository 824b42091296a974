"""LocalHost: this machine, through the Host protocol.

Reads never raise: errors come back as errno names (``ENOENT``, ``EACCES``, ``EISDIR``...).

Blocking I/O: a sysfs or procfs attribute read costs 10-20 us, a hop to a worker thread
50-250 us (measured on the build VM: 15 us sync against ~240 us through
``anyio.to_thread.run_sync`` for ``vendor``/``class``/``numa_node``), so small pseudo-file reads
run inline. Reads that can be slow or hang go to a worker thread: PCI ``config``/``vpd``/``rom``
(``config`` took 1.9 ms: one config cycle per dword), ``/proc/PID/...`` (blocks on a stuck
process's memory lock, the classic hanging ``ps``) and every path outside ``/sys`` and ``/proc``
(real disks, FUSE such as Proxmox's ``/etc/pve``).

``exists`` follows symbolic links (a dangling link does not exist), as ``SnapshotHost`` does;
``readlink`` tells a dangling link apart. ``write`` never creates files (neither does a
snapshot): every runtime change targets an existing sysfs, procfs or config-space file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import socket
import time
from collections.abc import Sequence

import anyio
import anyio.abc

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, HostWriteError, NvmlResult
from rigaudit.tools.hosts.launch import launch_argv, spawn_options
from rigaudit.tools.hosts.nvml_local import NvmlFacade

MAX_READ_BYTES = 8 * 1024 * 1024
"""Files larger than this read as ``EFBIG`` (never silently cut)."""
MAX_OUTPUT_BYTES = 1024 * 1024
"""Per stream; the middle of longer output is cut, head and tail kept."""
_CHUNK = 64 * 1024
_SLOW_NAMES = frozenset({"config", "vpd", "rom"})
_PROC_PID = r"^/proc/(?:\d+|self|thread-self)/"


def errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, "EIO")


def _may_block(path: str) -> bool:
    if not path.startswith(("/sys/", "/proc/")):
        return True
    return path.rsplit("/", 1)[-1] in _SLOW_NAMES or re.match(_PROC_PID, path) is not None


def _is_pseudo(path: str) -> bool:
    return path.startswith(("/sys/", "/proc/"))


def read_file(path: str, limit: int = MAX_READ_BYTES) -> FileResult:
    """Read until EOF (sysfs and procfs report size 0); ``O_NONBLOCK`` keeps FIFOs and ``/proc/kmsg`` from hanging."""
    if not path.startswith("/"):
        return FileResult(path, None, "EINVAL")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        return FileResult(path, None, errno_name(exc))
    try:
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return FileResult(path, b"".join(chunks))
            size += len(chunk)
            if size > limit:
                return FileResult(path, None, "EFBIG")
            chunks.append(chunk)
    except OSError as exc:
        return FileResult(path, None, errno_name(exc))
    finally:
        os.close(fd)


def list_directory(path: str) -> DirResult:
    if not path.startswith("/"):
        return DirResult(path, None, "EINVAL")
    try:
        return DirResult(path, tuple(sorted(os.listdir(path))))
    except OSError as exc:
        return DirResult(path, None, errno_name(exc))


def read_link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except (OSError, ValueError):
        return None


def write_file(path: str, data: bytes, offset: int | None) -> None:
    """One ``write`` (pseudo files take a value in one call) or ``pwrite`` at ``offset`` (config space)."""
    if not path.startswith("/"):
        raise HostWriteError(f"{path}: not an absolute path")
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
    if offset is None and not _is_pseudo(path):
        flags |= os.O_TRUNC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise HostWriteError(f"{path}: {errno_name(exc)} ({exc.strerror})") from None
    try:
        written = os.pwrite(fd, data, offset) if offset is not None else os.write(fd, data)
        while not _is_pseudo(path) and offset is None and 0 < written < len(data):
            written += os.write(fd, data[written:])
    except OSError as exc:
        raise HostWriteError(f"{path}: {errno_name(exc)} ({exc.strerror})") from None
    finally:
        os.close(fd)
    if written != len(data):
        raise HostWriteError(f"{path}: short write ({written} of {len(data)} bytes)")


class CappedOutput:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts what it cut."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        if not self.cut:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        marker = f"\n[... {self.cut} bytes cut by rigaudit's output cap ...]\n"
        return self.head.decode("utf-8", errors="replace") + marker + self.tail.decode("utf-8", errors="replace")


async def _drain(stream: anyio.abc.ByteReceiveStream | None, sink: CappedOutput) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            sink.add(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


def kill_group(process: anyio.abc.Process) -> None:
    """SIGKILL to the process's group (it was started in a session of its own), then to the process itself."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


def start_failure(argv: tuple[str, ...], exc: OSError) -> CommandResult:
    """The result of a command that could not start: ``not_found`` or ``failed_to_start``, with the reason."""
    if isinstance(exc, FileNotFoundError):
        return CommandResult(argv, error="not_found", stderr=f"{argv[0]}: no such program")
    reason = exc.strerror or ("permission denied" if isinstance(exc, PermissionError) else str(exc))
    return CommandResult(argv, error="failed_to_start", stderr=f"{argv[0]}: {reason}")


def finished(
    argv: tuple[str, ...],
    returncode: int | None,
    out: CappedOutput,
    err: CappedOutput,
    *,
    started: float,
    timed_out: bool,
    timeout_s: float,
) -> CommandResult:
    """The result of a command that ran (or was killed at its time limit), its output capped."""
    stderr = err.text()
    if timed_out:
        stderr += f"\n[rigaudit: killed after {timeout_s:g} s]"
    return CommandResult(
        argv=argv,
        exit_code=None if timed_out else returncode,
        stdout=out.text(),
        stderr=stderr,
        duration_s=round(time.monotonic() - started, 3),
        error="timeout" if timed_out else None,
        truncated=out.cut + err.cut,
    )


async def run_command(argv: Sequence[str], *, timeout_s: float, max_output: int = MAX_OUTPUT_BYTES) -> CommandResult:
    """Run argv (never a shell) in its own process group, time-limited, output capped (see :mod:`.launch`)."""
    key = tuple(argv)
    launch = launch_argv(key)
    if isinstance(launch, CommandResult):
        return launch
    started = time.monotonic()
    try:
        process = await anyio.open_process(
            launch,
            **spawn_options(),
        )
    except OSError as exc:
        return start_failure(key, exc)
    out, err = CappedOutput(max_output), CappedOutput(max_output)
    timed_out = False
    try:
        with anyio.move_on_after(max(timeout_s, 0.001)) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(_drain, process.stdout, out)
                group.start_soon(_drain, process.stderr, err)
                await process.wait()
        if scope.cancelled_caught:
            # A grandchild holding the pipes after the command exited is not the command timing out.
            timed_out = process.returncode is None
            kill_group(process)
    finally:
        if process.returncode is None:
            kill_group(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return finished(key, process.returncode, out, err, started=started, timed_out=timed_out, timeout_s=timeout_s)


class LocalHost:
    """This machine. NVML is reached through :class:`NvmlFacade` (``pynvml``), initialised lazily."""

    def __init__(
        self,
        *,
        nvml: NvmlFacade | None = None,
        max_read_bytes: int = MAX_READ_BYTES,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self._nvml = nvml if nvml is not None else NvmlFacade()
        self.max_read_bytes = max_read_bytes
        self.max_output_bytes = max_output_bytes
        self._name = socket.gethostname()

    @property
    def name(self) -> str:
        return self._name

    @property
    def source(self) -> str:
        return "local"

    async def read(self, path: str) -> FileResult:
        if _may_block(path):
            return await anyio.to_thread.run_sync(read_file, path, self.max_read_bytes)
        return read_file(path, self.max_read_bytes)

    async def list_dir(self, path: str) -> DirResult:
        if _may_block(path):
            return await anyio.to_thread.run_sync(list_directory, path)
        return list_directory(path)

    async def readlink(self, path: str) -> str | None:
        if _may_block(path):
            return await anyio.to_thread.run_sync(read_link, path)
        return read_link(path)

    async def exists(self, path: str) -> bool:
        if _may_block(path):
            return await anyio.to_thread.run_sync(os.path.exists, path)
        return os.path.exists(path)

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        return await run_command(argv, timeout_s=timeout_s, max_output=self.max_output_bytes)

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        return await self._nvml.call(fn, *args)

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        if _may_block(path):
            await anyio.to_thread.run_sync(write_file, path, data, offset)
        else:
            write_file(path, data, offset)

    async def aclose(self) -> None:
        await self._nvml.aclose()
