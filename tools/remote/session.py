"""One node's collection over one pipe: its mode line, then a snapshot stream or a node server session.

:func:`collect_node` starts the transport's process (``ssh ... sh -c SCRIPT``), reads the node's
``RIGAUDIT-NODE`` line and then either reads the ``snapshot --stdout`` stream to its end, or sends
the zipapp and hands a :class:`RemoteHost` to ``with_server`` (the caller records a snapshot through
it). Failures raise :class:`NodeError` with one line a person can act on (ssh's own last words
when the connection failed). The node's process group is killed on the way out, whatever happened.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.local import CappedOutput, kill_group
from rigaudit.tools.remote.client import NodeClient, NodeServerError, RemoteHost
from rigaudit.tools.remote.payload import framed_payload
from rigaudit.tools.remote.transport import MARK

DEFAULT_MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
_MAX_NOISE_LINES = 200
_STDERR_CAP = 64 * 1024


class NodeError(OperationError):
    """Collection on a node failed; ``stage`` is ``connect`` or ``collect``; ``node_status`` is the exit
    status of the node's ``rigaudit snapshot --stdout`` when that is what failed."""

    def __init__(self, message: str, *, stage: str = "collect", node_status: int | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.node_status = node_status


class NodeCollection(Record):
    """What came back: ``archive`` (installed mode) or nothing (server mode: ``with_server`` kept it)."""

    mode: str
    archive: bytes | None
    stderr: str
    hello: Mapping[str, object] | None = None

    def warnings(self) -> list[str]:
        lines = [line.strip() for line in self.stderr.splitlines()]
        return [line.removeprefix("rigaudit: warning: ") for line in lines if line.startswith("rigaudit: warning:")]


def last_words(stderr: str) -> str:
    """The line of stderr that says what went wrong (ssh prints it last)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("[rigaudit")]
    return lines[-1][:300] if lines else ""


async def _read_mark(reader: BufferedByteReceiveStream) -> str | None:
    """The node's mode, skipping what login scripts print first; ``None`` when the stream ended."""
    for _ in range(_MAX_NOISE_LINES):
        try:
            line = await reader.receive_until(b"\n", 64 * 1024)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return None
        except anyio.DelimiterNotFound:
            continue
        text = line.decode("utf-8", errors="replace").strip()
        if text.startswith(MARK + " "):
            return text[len(MARK) + 1 :].strip()
    return None


async def _read_all(reader: BufferedByteReceiveStream, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while True:
            chunk = await reader.receive()
            size += len(chunk)
            if size > limit:
                raise NodeError(f"the snapshot stream exceeds {limit // (1024 * 1024)} MiB; stopped")
            chunks.append(chunk)
    return b"".join(chunks)


async def _drain(stream: anyio.abc.ByteReceiveStream | None, sink: CappedOutput, done: anyio.Event) -> None:
    try:
        if stream is not None:
            async for chunk in stream:
                sink.add(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        done.set()


async def collect_node(
    argv: Sequence[str],
    *,
    source: str,
    with_server: Callable[[RemoteHost], Awaitable[None]],
    max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
    env: Mapping[str, str] | None = None,
) -> NodeCollection:
    """Collect one node through the process ``argv`` (see the module docstring)."""
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        raise NodeError(f"cannot start {argv[0]}: {exc.strerror or exc}", stage="connect") from None
    stderr, stderr_done = CappedOutput(_STDERR_CAP), anyio.Event()

    async def finish() -> int:
        """Wait for the node's exit status and its last stderr words."""
        code = await process.wait()
        with anyio.move_on_after(2):
            await stderr_done.wait()
        return code

    outcome: list[NodeCollection | NodeError] = []
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, process.stderr, stderr, stderr_done)
            try:
                outcome.append(await _converse(process, group, stderr, finish, source, with_server, max_archive_bytes))
            except NodeError as exc:
                outcome.append(exc)
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            kill_group(process)
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):
                await process.aclose()
    if isinstance(outcome[0], NodeError):
        raise outcome[0]
    return outcome[0]


async def _converse(
    process: anyio.abc.Process,
    group: anyio.abc.TaskGroup,
    stderr: CappedOutput,
    finish: Callable[[], Awaitable[int]],
    source: str,
    with_server: Callable[[RemoteHost], Awaitable[None]],
    max_archive_bytes: int,
) -> NodeCollection:
    assert process.stdout is not None and process.stdin is not None
    reader = BufferedByteReceiveStream(process.stdout)
    mode = await _read_mark(reader)
    if mode is None:
        code = await finish()
        said = last_words(stderr.text())
        if code == 255:  # ssh's own failure: unreachable, refused, host key, permission denied
            raise NodeError(said or "ssh failed (exit status 255)", stage="connect")
        raise NodeError(f"the node did not start a collection (exit status {code}){': ' + said if said else ''}")
    if mode == "missing":
        await finish()
        raise NodeError("neither rigaudit nor python3 is on the node's PATH")
    if mode == "installed":
        await process.stdin.aclose()
        archive = await _read_all(reader, max_archive_bytes)
        code = await finish()
        if code != 0:
            said = last_words(stderr.text())
            raise NodeError(f"`rigaudit snapshot --stdout` failed on the node (exit status {code}): {said}", node_status=code)
        return NodeCollection("installed", archive, stderr.text())
    if mode != "server":
        raise NodeError(f"the node announced an unknown mode {mode!r}")
    try:
        await process.stdin.send(framed_payload())
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        await finish()
        raise NodeError(f"the node closed the connection before the node server started: {last_words(stderr.text())}") from None
    client = NodeClient(process.stdin, reader)
    try:
        hello = await client.handshake()
    except NodeServerError as exc:
        await finish()
        said = last_words(stderr.text())
        raise NodeError(f"{exc}{': ' + said if said else ''}") from None
    group.start_soon(client.read_answers)
    await with_server(RemoteHost(client, source=source))
    if client.lost is not None:
        raise NodeError(f"lost the node server during collection ({client.lost}) {last_words(stderr.text())}".strip())
    await client.bye()
    await process.stdin.aclose()
    await finish()
    return NodeCollection("server", None, stderr.text(), hello)
