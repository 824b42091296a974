"""Worker processes that audit snapshots, so a fleet's audits use every core.

Each worker is ``python -m rigaudit.orchestrator.fleet.pool``: it reads a pickled :class:`AuditJob` (length
prefixed) from stdin, writes the pickled :class:`AuditOutcome` to stdout, and waits for the next one.
Unlike ``multiprocessing`` or ``anyio.to_process`` it never re-runs the parent's ``__main__``, so it
works however rigaudit was started (``rigaudit``, ``python -m rigaudit``, a user's script).
Jobs only ever come from the parent that started the worker (pickle is trusted here, nowhere else).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
from typing import BinaryIO

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from rigaudit.orchestrator.fleet.worker import AuditJob, AuditOutcome, audit_job

_HEADER = struct.Struct("!Q")


class AuditPool:
    """At most ``size`` workers, started on demand and reused; :meth:`aclose` ends them all."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._limiter = anyio.CapacityLimiter(self.size)
        self._idle: list[tuple[anyio.abc.Process, BufferedByteReceiveStream]] = []
        self._all: list[anyio.abc.Process] = []

    async def _start(self) -> tuple[anyio.abc.Process, BufferedByteReceiveStream]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = await anyio.open_process(
            [sys.executable, "-m", "rigaudit.orchestrator.fleet.pool"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            env=env,
            start_new_session=True,  # Ctrl-C reaches the coordinator, which ends its workers
        )
        self._all.append(process)
        assert process.stdout is not None
        return process, BufferedByteReceiveStream(process.stdout)

    async def audit(self, job: AuditJob) -> AuditOutcome:
        async with self._limiter:
            worker = self._idle.pop() if self._idle else await self._start()
            process, reader = worker
            assert process.stdin is not None
            try:
                data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
                await process.stdin.send(_HEADER.pack(len(data)) + data)
                size = _HEADER.unpack(await reader.receive_exactly(_HEADER.size))[0]
                audited = pickle.loads(await reader.receive_exactly(size))
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._discard(process)
                return AuditOutcome(None, {}, f"the audit worker died (exit status {process.returncode})")
            except BaseException:
                await self._discard(process)  # cancelled mid-job: its answer would be out of step
                raise
            self._idle.append(worker)
            if not isinstance(audited, AuditOutcome):
                return AuditOutcome(None, {}, "the audit worker answered nonsense")
            return audited

    async def _discard(self, process: anyio.abc.Process) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await process.aclose()

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for process in self._all:
                if process.stdin is not None:
                    with contextlib.suppress(Exception):
                        await process.stdin.aclose()  # end of input: the worker exits
            for process in self._all:
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    await self._discard(process)
                with contextlib.suppress(Exception):
                    await process.aclose()
        self._idle.clear()
        self._all.clear()


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    while (header := _read_exactly(stdin, _HEADER.size)) is not None:
        body = _read_exactly(stdin, _HEADER.unpack(header)[0])
        if body is None:
            return 1
        job = pickle.loads(body)
        result = audit_job(job) if isinstance(job, AuditJob) else AuditOutcome(None, {}, "not an audit job")
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()
    return 0


def main() -> int:
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the channel
    sys.stdout = sys.stderr
    return serve(sys.stdin.buffer, channel)


if __name__ == "__main__":
    raise SystemExit(main())
