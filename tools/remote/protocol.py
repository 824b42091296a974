"""The node server's wire protocol: one JSON object a line, each way (stdlib only: runs on the node).

The coordinator sends ``{"id": 7, "op": "read", "path": "/proc/cmdline"}``; the node server answers
``{"id": 7, "data": "<base64>"}`` or ``{"id": 7, "error": "ENOENT"}``. Operations are the read half
of the Host protocol: ``read``, ``list_dir``, ``readlink``, ``exists``, ``run``, ``nvml``; ``bye``
ends the session. The node server's first line is its hello: ``{"hello": "rigaudit-node-server/1", ...}``.
A request the node server cannot parse is answered ``{"id": N, "fail": "why"}``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, NvmlResult

PROTOCOL = "rigaudit-node-server/1"
OPS = frozenset({"read", "list_dir", "readlink", "exists", "run", "nvml"})
Message = Mapping[str, object]


def dumps(message: Mapping[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def loads(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line.decode("utf-8"))
    except RecursionError:  # a reply nested this deep is not one (the payload carries no tools.bounded)
        raise ValueError("nested too deeply") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


# -- node server side: results to messages ------------------------------------------------------------


def encode_file(result: FileResult) -> dict[str, object]:
    if result.data is not None:
        return {"data": base64.b64encode(result.data).decode("ascii")}
    return {"error": result.error or "EIO"}


def encode_dir(result: DirResult) -> dict[str, object]:
    return {"entries": list(result.entries)} if result.entries is not None else {"error": result.error or "EIO"}


def encode_command(result: CommandResult) -> dict[str, object]:
    return {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_s": result.duration_s,
        "error": result.error,
        "truncated": result.truncated,
    }


def encode_nvml(result: NvmlResult) -> dict[str, object]:
    return {"error": result.error} if result.error is not None else {"value": result.value}


# -- coordinator side: messages to results ------------------------------------------------------


def _error(message: Message, default: str) -> str:
    error = message.get("error")
    return error if isinstance(error, str) and error else default


def decode_file(path: str, message: Message) -> FileResult:
    data = message.get("data")
    if isinstance(data, str):
        try:
            return FileResult(path, base64.b64decode(data.encode("ascii"), validate=True))
        except ValueError:
            return FileResult(path, None, "EIO")
    return FileResult(path, None, _error(message, "EIO"))


def decode_dir(path: str, message: Message) -> DirResult:
    entries = message.get("entries")
    if isinstance(entries, list) and all(isinstance(e, str) for e in entries):
        return DirResult(path, tuple(sorted(str(e) for e in entries)))
    return DirResult(path, None, _error(message, "EIO"))


def decode_readlink(message: Message) -> str | None:
    target = message.get("target")
    return target if isinstance(target, str) else None


def decode_exists(message: Message) -> bool:
    return message.get("exists") is True


def decode_command(argv: Sequence[str], message: Message) -> CommandResult:
    exit_code = message.get("exit_code")
    duration = message.get("duration_s")
    truncated = message.get("truncated")
    error = message.get("error")
    if "fail" in message:
        return CommandResult(tuple(argv), error="failed_to_start", stderr=f"node server: {message['fail']}")
    return CommandResult(
        argv=tuple(argv),
        exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
        stdout=str(message.get("stdout") or ""),
        stderr=str(message.get("stderr") or ""),
        duration_s=float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else 0.0,
        error=error if isinstance(error, str) and error else None,
        truncated=truncated if isinstance(truncated, int) and not isinstance(truncated, bool) else 0,
    )


def decode_nvml(fn: str, args: Sequence[int], message: Message) -> NvmlResult:
    if "value" in message and "error" not in message:
        return NvmlResult(fn, tuple(args), value=message["value"])
    return NvmlResult(fn, tuple(args), error=_error(message, "UNKNOWN"))
