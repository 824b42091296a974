"""RemoteHost: a node's machine through the node server protocol (the coordinator's side).

Requests are pipelined: every operation in flight is one line on the wire, answered by id, so
the investigators' concurrency hides the round trips. Reads never raise: when the connection is
lost every pending and later operation answers with an error, and :attr:`NodeClient.lost` says why
(the caller must then treat the node as failed rather than trust a snapshot of errors).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, HostWriteError, NvmlResult
from rigaudit.tools.remote import protocol

MAX_LINE_BYTES = 64 * 1024 * 1024
"""One answer's size limit (a file is at most 8 MiB, base64 adds a third)."""


class NodeServerError(OperationError):
    """The node server did not start or broke the protocol; the message is one line."""


class NodeClient:
    """Request/answer matching over one node server's stdin/stdout."""

    def __init__(self, send: anyio.abc.ByteSendStream, receive: BufferedByteReceiveStream) -> None:
        self._send = send
        self._receive = receive
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[anyio.Event, list[dict[str, object]]]] = {}
        self._send_lock = anyio.Lock()
        self.hello: dict[str, object] = {}
        self.lost: str | None = None

    async def handshake(self) -> dict[str, object]:
        try:
            line = await self._receive.receive_until(b"\n", MAX_LINE_BYTES)
            hello = protocol.loads(line)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise NodeServerError("the node's python3 exited before the node server started") from None
        except (ValueError, anyio.DelimiterNotFound) as exc:
            raise NodeServerError(f"the node server's first line is not its hello ({exc.__class__.__name__})") from None
        if hello.get("hello") != protocol.PROTOCOL:
            raise NodeServerError(f"the node answered {str(hello.get('hello'))!r}, not {protocol.PROTOCOL!r}")
        self.hello = hello
        return hello

    async def read_answers(self) -> None:
        """Run in the background for the session's lifetime: route each answer to its caller."""
        reason = "the connection closed"
        try:
            while True:
                line = await self._receive.receive_until(b"\n", MAX_LINE_BYTES)
                try:
                    message = protocol.loads(line)
                except ValueError:
                    reason = "the node server sent an unreadable line"
                    break
                request_id = message.get("id")
                waiter = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
                if waiter is not None:
                    waiter[1].append(message)
                    waiter[0].set()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        except anyio.DelimiterNotFound:
            reason = "an answer exceeded the size limit"
        self._fail_all(reason)

    def _fail_all(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason
        pending, self._pending = self._pending, {}
        for event, box in pending.values():
            box.append({"error": "EIO", "fail": reason})
            event.set()

    async def call(self, op: str, **fields: object) -> Mapping[str, object]:
        if self.lost is not None:
            return {"error": "EIO", "fail": self.lost}
        request_id = next(self._ids)
        event, box = anyio.Event(), list[dict[str, object]]()
        self._pending[request_id] = (event, box)
        try:
            async with self._send_lock:
                await self._send.send(protocol.dumps({"id": request_id, "op": op, **fields}))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._fail_all("the connection closed")
        await event.wait()
        answer: Mapping[str, object] = box[0]
        return answer

    async def bye(self) -> None:
        try:
            async with self._send_lock:
                await self._send.send(protocol.dumps({"op": "bye"}))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass


class RemoteHost:
    """A node's machine, read through its node server. Read-only: a fleet audit changes nothing."""

    def __init__(self, client: NodeClient, *, source: str) -> None:
        self.client = client
        self._source = source

    @property
    def name(self) -> str:
        return str(self.client.hello.get("hostname") or self._source)

    @property
    def source(self) -> str:
        return self._source

    async def read(self, path: str) -> FileResult:
        return protocol.decode_file(path, await self.client.call("read", path=path))

    async def list_dir(self, path: str) -> DirResult:
        return protocol.decode_dir(path, await self.client.call("list_dir", path=path))

    async def readlink(self, path: str) -> str | None:
        return protocol.decode_readlink(await self.client.call("readlink", path=path))

    async def exists(self, path: str) -> bool:
        return protocol.decode_exists(await self.client.call("exists", path=path))

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        return protocol.decode_command(argv, await self.client.call("run", argv=list(argv), timeout_s=timeout_s))

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        return protocol.decode_nvml(fn, args, await self.client.call("nvml", fn=fn, args=list(args)))

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        raise HostWriteError(f"{path}: {self._source} is read-only during a fleet audit")

    async def aclose(self) -> None:
        return None
