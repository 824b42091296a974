"""Host operations as :class:`ToolCall` events, and back.

The encoding (``op``, ``target``, ``args``, ``result``) is the transcript's contract:
:func:`tool_call_from_probe` writes it, :func:`host_result` inverts it (rebuild and verification).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, Host, NvmlResult
from rigaudit.tools.hosts.probe import HostOpResult
from rigaudit.tools.schema.events.audit import ToolCall

OPS = ("read", "list_dir", "readlink", "exists", "run", "nvml")


def _op_from_ref(ref: str) -> str:
    prefix = ref.partition(":")[0]
    return {"file": "read", "dir": "list_dir", "link": "readlink", "exists": "exists", "cmd": "run", "nvml": "nvml"}.get(
        prefix, prefix
    )


def operation(result: HostOpResult, ref: str = "") -> tuple[str, str, list[Any]]:
    """``(op, target, args)`` of the host operation that gave ``result`` (its ``ref`` tells a readlink from an exists)."""
    if isinstance(result, (FileResult, DirResult)):
        return ("read" if isinstance(result, FileResult) else "list_dir"), result.path, []
    if isinstance(result, CommandResult):
        return "run", " ".join(result.argv), list(result.argv)
    if isinstance(result, NvmlResult):
        return "nvml", result.fn, list(result.args)
    path, value = result
    return ("exists" if isinstance(value, bool) and _op_from_ref(ref) != "readlink" else "readlink"), path, []


def encode_answer(result: HostOpResult, op: str) -> dict[str, Any]:
    """The ``result`` of a :class:`ToolCall` of ``op`` that ``result`` answered."""
    if isinstance(result, FileResult):
        if result.data is None:
            return {"error": result.error or "ENOENT"}
        return {"data_b64": base64.b64encode(result.data).decode("ascii")}
    if isinstance(result, DirResult):
        return {"error": result.error or "ENOENT"} if result.entries is None else {"entries": list(result.entries)}
    if isinstance(result, CommandResult):
        return {
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "duration_s": result.duration_s,
            "error": result.error,
            "truncated": result.truncated,
        }
    if isinstance(result, NvmlResult):
        return {"error": result.error} if result.error else {"result": result.value}
    return {"exists": result[1]} if op == "exists" else {"target": result[1]}


def encode_result(result: HostOpResult, ref: str = "") -> tuple[str, str, list[Any], dict[str, Any]]:
    """``(op, target, args, result)`` for one host operation's result."""
    op, target, args = operation(result, ref)
    return op, target, args, encode_answer(result, op)


def tool_call_from_probe(area: str | None, ref: str, result: HostOpResult) -> ToolCall:
    """The event for one operation that reached the host (a Probe observer's ``(ref, result)``)."""
    op, target, args, encoded = encode_result(result, ref)
    return ToolCall(area=area, op=op, target=target, args=args, result=encoded)


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def decode_data(result: dict[str, Any]) -> bytes | None:
    """The bytes of a ``read`` result, or ``None`` (error, or undecodable base64)."""
    raw = result.get("data_b64")
    if not isinstance(raw, str):
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None


def host_result(call: ToolCall) -> HostOpResult | None:
    """The host result a tool call recorded, or ``None`` when its op or shape is unknown."""
    result = call.result
    if call.op == "read":
        data = decode_data(result)
        if data is None:
            return FileResult(call.target, None, _str_or_none(result.get("error")) or "ENOENT")
        return FileResult(call.target, data)
    if call.op == "list_dir":
        entries = result.get("entries")
        if isinstance(entries, list):
            return DirResult(call.target, tuple(str(e) for e in entries))
        return DirResult(call.target, None, _str_or_none(result.get("error")) or "ENOENT")
    if call.op == "readlink":
        return (call.target, _str_or_none(result.get("target")))
    if call.op == "exists":
        return (call.target, bool(result.get("exists")))
    if call.op == "run":
        argv = tuple(str(a) for a in call.args) if call.args else tuple(call.target.split())
        exit_code = result.get("exit_code")
        duration = result.get("duration_s")
        truncated = result.get("truncated")
        return CommandResult(
            argv=argv,
            exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
            stdout=str(result.get("stdout") or ""),
            stderr=str(result.get("stderr") or ""),
            duration_s=float(duration) if isinstance(duration, (int, float)) else 0.0,
            error=_str_or_none(result.get("error")) or None,
            truncated=truncated if isinstance(truncated, int) else 0,
        )
    if call.op == "nvml":
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in call.args):
            return None
        args = tuple(int(a) for a in call.args)
        error = result.get("error")
        if error:
            return NvmlResult(call.target, args, error=str(error))
        return NvmlResult(call.target, args, value=result.get("result"))
    return None


async def ask(host: Host, call: ToolCall) -> HostOpResult | None:
    """Ask ``host`` the operation ``call`` recorded (a replay's, a rebuild's); ``None`` for one it does not know."""
    if call.op == "read":
        return await host.read(call.target)
    if call.op == "list_dir":
        return await host.list_dir(call.target)
    if call.op == "readlink":
        return (call.target, await host.readlink(call.target))
    if call.op == "exists":
        return (call.target, await host.exists(call.target))
    if call.op == "run":
        return await host.run(tuple(str(a) for a in call.args) if call.args else tuple(call.target.split()))
    if call.op == "nvml" and all(isinstance(a, int) and not isinstance(a, bool) for a in call.args):
        return await host.nvml(call.target, *(int(a) for a in call.args))
    return None
