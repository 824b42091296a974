"""``docker inspect`` of the container a server runs in, as the Docker host answers it (``docker run -d --gpus all
--ipc=host --network=host -v /models:/models:ro IMAGE``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.hostgen.spec import ProcessSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

IMAGE = "vllm/vllm-openai:v0.6.3"
IMAGE_ID = "sha256:7d3c1b2a9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b"


def inspect(cid: str, server: ProcessSpec, name: str = "vllm") -> list[dict[str, object]]:
    """One container of ``server``: its definition as ``docker inspect`` prints it (the fields rigaudit reads)."""
    return [
        {
            "Id": cid,
            "Name": f"/{name}",
            "Image": IMAGE_ID,
            "Config": {
                "Image": IMAGE,
                "Env": [f"{k}={v}" for k, v in server.env],
                "Entrypoint": list(server.argv[:3]),
                "Cmd": list(server.argv[3:]),
                "User": "",
                "WorkingDir": "/vllm-workspace",
                "Labels": dict(server.labels),
            },
            "HostConfig": {
                "NetworkMode": "host",
                "IpcMode": "host",
                "Runtime": "runc",
                "ShmSize": 67108864,
                "Binds": ["/models:/models:ro"],
                "PortBindings": {},
                "AutoRemove": False,
                "Privileged": False,
                "DeviceRequests": [{"Driver": "", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]], "Options": {}}],
                "Ulimits": [{"Name": "nofile", "Soft": server.nofile[0], "Hard": server.nofile[1]}],
                "CapAdd": None,
                "Devices": [],
                "SecurityOpt": None,
            },
        }
    ]


def write_inspect(built: Built, cid: str, server: ProcessSpec) -> None:
    """``docker inspect CID`` (its short id, as the cgroup gives it) answers with the container's definition."""
    built.tree.command(("docker", "inspect", cid), json.dumps(inspect(cid, server), indent=4) + "\n")
