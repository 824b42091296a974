"""Before a load is sent: the URL names an OpenAI-compatible server that answers, and it serves the model.

One GET of ``/v1/models`` within a deadline. What a person must change is said in one line
(:class:`EndpointError`, exit status 2): a URL that already names an endpoint ("drop /chat/completions from
the URL"), nothing listening ("nothing listens on 127.0.0.1:18999"), no answer in time, a key refused. A model
the server does not list is a warning. A server that answers otherwise (no ``/v1/models`` route, a body that is not
a model list) is not judged here: the load's own errors say what it does.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit, urlunsplit

import anyio

from rigaudit.tools.bench._http import HttpError, Response, StreamingClient
from rigaudit.tools.core.errors import UsageError

DEADLINE_S = 10.0
"""How long the one request may take."""
MAX_BODY = 1 << 20
"""The most of the model list read."""
_ENDPOINTS = ("/chat/completions", "/completions", "/models")


class EndpointError(UsageError):
    """The server URL cannot take the load: one line that says what to change."""


def check_url(base_url: str, what: str = "--base-url") -> None:
    """A URL that names an endpoint rather than the server (``.../v1/chat/completions``): :class:`EndpointError`."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    for tail in _ENDPOINTS:
        if path.endswith(tail):
            fixed = urlunsplit((parts.scheme, parts.netloc, path[: -len(tail)] or "/v1", "", ""))
            raise EndpointError(f"{what} {base_url}: drop {tail} from the URL (give {fixed}: rigaudit adds the endpoint)")


def _models_path(base_url: str) -> str:
    path = urlsplit(base_url).path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{path}/models"


def _probe(base_url: str, deadline_s: float) -> str | None:
    """Why nothing can be reached at the URL's host and port (a TCP connect, no request); ``None``: it connects."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        socket.create_connection((host, port), timeout=deadline_s).close()
    except ConnectionRefusedError:
        return f"nothing listens on {where} (is the server up, on this port?)"
    except socket.gaierror:
        return f"no such host {host}"
    except TimeoutError:
        return f"no answer from {where} within {deadline_s:g} s"
    except OSError as exc:
        return f"cannot reach {where}: {exc.strerror or exc}"
    return None


async def check_endpoint(
    base_url: str, model: str, *, api_key: str | None = None, deadline_s: float = DEADLINE_S, what: str = "--base-url"
) -> str | None:
    """One GET of the server's model list within ``deadline_s``; :class:`EndpointError` with what to change.

    Returns a warning when the server lists models and ``model`` is not one of them (a server may serve a name
    it does not list: the load goes on and its errors, if any, say so)."""
    check_url(base_url, what)
    if (why := await anyio.to_thread.run_sync(_probe, base_url, deadline_s)) is not None:
        raise EndpointError(f"{what} {base_url}: {why}")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    client = StreamingClient(base_url, headers)
    try:
        with anyio.fail_after(deadline_s):
            async with client.get(_models_path(base_url)) as response:
                status = response.status
                body = await _bounded(response) if status == 200 else b""
    except TimeoutError:
        raise EndpointError(f"{what} {base_url}: no answer from {client.authority} within {deadline_s:g} s") from None
    except HttpError as exc:
        if str(exc).startswith("cannot connect"):  # TLS refused, or the server went away since the probe
            raise EndpointError(f"{what} {base_url}: {exc}") from None
        return None  # it answered, not as an OpenAI server would: the load's own errors say what it does
    finally:
        await client.aclose()
    if status in (401, 403):
        raise EndpointError(f"{what} {base_url}: the server refused the request (HTTP {status}): give its key (--api-key-env)")
    served = _served(body) if status == 200 else []
    if not served or model in served:
        return None
    shown = ", ".join(served[:5]) + (f" and {len(served) - 5} more" if len(served) > 5 else "")
    return f"--model {model}: {client.authority} lists no such model (it lists {shown}); its requests may fail"


async def _bounded(response: Response) -> bytes:
    body = b""
    async for piece in response.aiter_bytes():
        body += piece
        if len(body) > MAX_BODY:
            break
    return body


def _served(body: bytes) -> list[str]:
    """The model ids of an OpenAI ``/v1/models`` answer; ``[]`` when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return []
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [str(item["id"]) for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)]


__all__ = ["DEADLINE_S", "EndpointError", "check_endpoint", "check_url"]
