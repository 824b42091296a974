"""The GPUs the Kubernetes node advertises: ``status.capacity["nvidia.com/gpu"]`` of its node object.

``--kube-node SOURCE`` names the object: a file (a recorded ``kubectl get node N -o json``), an ``http(s)://``
URL of the API server's node, or ``in-cluster``: in a pod, ``$NODE_NAME``'s object from the API server
``$KUBERNETES_SERVICE_HOST``/``_PORT`` name. For an https URL the pod's service account (token and CA) is used
when it is mounted. What cannot be read or parsed is
one line in :attr:`KubeNode.error`, never an exception.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rigaudit.tools.core.record import Record

RESOURCE = "nvidia.com/gpu"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
MAX_OBJECT_BYTES = 4 * 1024 * 1024
TIMEOUT_S = 5.0
_COUNT = r"[0-9]{1,9}"


class KubeNode(Record):
    source: str
    name: str = ""
    capacity: int | None = None
    """``None``: the node advertises no ``nvidia.com/gpu`` (or, with :attr:`error`, could not be read)."""
    allocatable: int | None = None
    error: str | None = None


def _quantity(value: object) -> int | None:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return int(text) if re.fullmatch(_COUNT, text) else None  # int() also takes non-ASCII digits, and fails on 5,000


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def parse_node(data: bytes, source: str) -> KubeNode:
    from rigaudit.tools.files.bounded import loads

    try:
        node = loads(data)
    except ValueError as exc:
        return KubeNode(source, error=f"{source}: not a JSON node object ({exc})")
    if not isinstance(node, dict) or node.get("kind") != "Node":
        return KubeNode(source, error=f"{source}: not a Node object")
    status, meta = _object(node, "status"), _object(node, "metadata")
    capacity, allocatable = _object(status, "capacity"), _object(status, "allocatable")
    name = str(meta.get("name", ""))[:253]
    if RESOURCE in capacity and _quantity(capacity[RESOURCE]) is None:
        return KubeNode(source, name, error=f"{source}: {RESOURCE} capacity {str(capacity[RESOURCE])[:20]!r} is not a count")
    return KubeNode(source, name, _quantity(capacity.get(RESOURCE)), _quantity(allocatable.get(RESOURCE)))


def _fetch(url: str) -> bytes:
    import ssl  # only when a URL is named: a plain check loads no TLS
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    context = None
    if url.startswith("https://"):
        ca = SERVICE_ACCOUNT / "ca.crt"
        context = ssl.create_default_context(cafile=str(ca) if ca.exists() else None)
        token = SERVICE_ACCOUNT / "token"
        if token.exists():
            request.add_header("Authorization", "Bearer " + token.read_text().strip())

    class Unfollowed(urllib.request.HTTPRedirectHandler):
        """A redirect is an error: followed, it would take the pod's token to whatever host, or plain http, it names."""

        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
            raise urllib.error.HTTPError(req.full_url, code, f"a redirect to {newurl[:200]}, not followed", headers, fp)

    opener = urllib.request.build_opener(Unfollowed, urllib.request.HTTPSHandler(context=context))
    with opener.open(request, timeout=TIMEOUT_S) as response:
        data: bytes = response.read(MAX_OBJECT_BYTES + 1)
    if len(data) > MAX_OBJECT_BYTES:
        raise ValueError(f"larger than {MAX_OBJECT_BYTES // 1024 // 1024} MiB")
    return data


IN_CLUSTER = "in-cluster"


def in_cluster_url(environ: Mapping[str, str]) -> str | None:
    """The API server's URL of this pod's node, from the variables Kubernetes and the pod spec set."""
    host, port, node = (environ.get(k, "") for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "NODE_NAME"))
    if not (host and node):
        return None
    host = f"[{host}]" if ":" in host else host
    return f"https://{host}:{port or '443'}/api/v1/nodes/{urllib.parse.quote(node, safe='')}"


def load(source: str, environ: Mapping[str, str] | None = None) -> KubeNode:
    """The node object named by ``source`` (a file, an http(s) URL, or ``in-cluster``)."""
    if source == IN_CLUSTER:
        url = in_cluster_url(os.environ if environ is None else environ)
        if url is None:
            why = "needs KUBERNETES_SERVICE_HOST (in a pod) and NODE_NAME (env valueFrom fieldRef spec.nodeName)"
            return KubeNode(source, error=f"--kube-node in-cluster {why}")
        source = url
    if source.startswith(("http://", "https://")):
        try:
            data = _fetch(source)
        except (OSError, ValueError) as exc:
            return KubeNode(source, error=f"{source}: cannot read the node object: {exc}")
        return parse_node(data, source)
    from rigaudit.tools.files.bounded import InputError, read_regular

    try:
        data = read_regular(Path(source), limit=MAX_OBJECT_BYTES, what=source)
    except InputError as exc:
        return KubeNode(source, error=str(exc))
    return parse_node(data, source)


__all__ = ["RESOURCE", "KubeNode", "load", "parse_node"]
