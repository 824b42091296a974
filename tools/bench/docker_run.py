"""The pair of arm commands for a server in a Docker container, from the container's ``docker inspect``.

The base arm removes the fix arm's container (when there is one) and restarts the container as found; the fix arm
stops it and runs a copy, ``NAME-rigaudit-ab``, with the change: the same image (by id), entrypoint, command,
environment less the variables to unset, user, working folder, GPUs, mounts, ports, network, IPC, /dev/shm size and
ulimits, with ``--ulimit nofile`` set when the change raises it. The container as found is never removed or edited,
so the server is left as found once the base arm runs last.

What a copy cannot carry over faithfully is refused with one line: a container that Docker Compose or the kubelet
manages (they would recreate or fight it), one started with ``--rm`` (stopping it removes it), options outside the
list above (capabilities, devices, ``--mount``, links, security options...), and secret-named variables (a command
line shows them in the journal and to ``ps``). The commands are shell text, every word quoted with :func:`shlex.quote`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from rigaudit.tools.bench.restart import ArmCommand
from rigaudit.tools.redact import is_secret_name

SUFFIX = "-rigaudit-ab"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
MANAGERS = (
    ("com.docker.compose.project", "Docker Compose (project {}): restart it with docker compose"),
    ("io.kubernetes.pod.name", "the kubelet (pod {}): change the pod spec"),
)
NOT_CARRIED = (
    "CapAdd",
    "CapDrop",
    "Devices",
    "DeviceCgroupRules",
    "Mounts",
    "Links",
    "VolumesFrom",
    "PidMode",
    "UTSMode",
    "UsernsMode",
    "SecurityOpt",
    "Tmpfs",
    "ExtraHosts",
    "Sysctls",
    "CpusetCpus",
    "CpusetMems",
    "NanoCpus",
    "CpuQuota",
    "CpuShares",
    "Memory",
    "Dns",
    "GroupAdd",
    "CgroupParent",
)
"""HostConfig options a copy does not carry over: a container that sets one is refused."""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _gpus(requests: Sequence[Any]) -> list[str]:
    for request in map(_dict, requests):
        if ["gpu"] not in _list(request.get("Capabilities")):
            continue
        ids = [str(i) for i in _list(request.get("DeviceIDs"))]
        count = request.get("Count")
        return ["--gpus", f'"device={",".join(ids)}"' if ids else "all" if count in (-1, None) else str(count)]
    return []


def _options(host: Mapping[str, Any], config: Mapping[str, Any], nofile: int | None) -> list[str]:
    words: list[str] = []
    for key, flag in (("NetworkMode", "--network"), ("IpcMode", "--ipc")):
        if (value := host.get(key)) and value != "default":
            words += [f"{flag}={value}"]
    if (runtime := host.get("Runtime")) and runtime != "runc":
        words.append(f"--runtime={runtime}")
    if host.get("Privileged") is True:
        words.append("--privileged")
    if isinstance(size := host.get("ShmSize"), int) and size > 0:
        words.append(f"--shm-size={size}")
    words += _gpus(_list(host.get("DeviceRequests")))
    for bind in _list(host.get("Binds")):
        words += ["-v", str(bind)]
    for port, bindings in sorted(_dict(host.get("PortBindings")).items()):
        for binding in map(_dict, _list(bindings)):
            where = ":".join(p for p in (str(binding.get("HostIp") or ""), str(binding.get("HostPort") or "")) if p)
            words += ["-p", f"{where}:{port}" if where else port]
    for limit in map(_dict, _list(host.get("Ulimits"))):
        if limit.get("Name") != "nofile" or nofile is None:
            words += ["--ulimit", f"{limit.get('Name')}={limit.get('Soft')}:{limit.get('Hard')}"]
    if nofile is not None:
        words += ["--ulimit", f"nofile={nofile}:{nofile}"]
    if user := config.get("User"):
        words += ["-u", str(user)]
    if folder := config.get("WorkingDir"):
        words += ["-w", str(folder)]
    return words


def _refusal(info: Mapping[str, Any], name: str, env: Sequence[str], unset: Sequence[str]) -> str | None:
    config, host = _dict(info.get("Config")), _dict(info.get("HostConfig"))
    labels = _dict(config.get("Labels"))
    for label, manager in MANAGERS:
        if label in labels:
            return f"container {name} is managed by {manager.format(labels[label])}"
    if not NAME.match(name) or not info.get("Image"):
        return f"docker inspect gives no name or image for container {name!r}"
    if host.get("AutoRemove") is True:
        return f"container {name} was started with --rm: stopping it would remove it"
    options = [key for key in NOT_CARRIED if host.get(key)]
    if options:
        return f"container {name} uses {', '.join(options)}, which rigaudit does not carry over into a docker run"
    secrets = [item.split("=", 1)[0] for item in env if is_secret_name(item.split("=", 1)[0])]
    if secrets:
        return f"the environment of container {name} holds {', '.join(secrets)}, which rigaudit does not put on a command line"
    missing = [u for u in unset if not any(item.split("=", 1)[0] == u for item in env)]
    if missing:
        return f"container {name}'s definition does not set {', '.join(missing)} (its process sets it itself)"
    return None


def container_arms(
    info: Mapping[str, Any], *, unset: Sequence[str] = (), nofile: int | None = None, docker: str = "docker"
) -> tuple[ArmCommand, ArmCommand] | str:
    """(base, fix) for the container ``info`` (one element of ``docker inspect``), or why rigaudit cannot derive them."""
    config = _dict(info.get("Config"))
    name = str(info.get("Name") or "").lstrip("/")
    env = [str(e) for e in _list(config.get("Env"))]
    refused = _refusal(info, name, env, unset)
    if refused is not None:
        return refused
    copy = name + SUFFIX
    entry = [str(w) for w in _list(config.get("Entrypoint"))]
    run = [docker, "run", "-d", "--name", copy, "--entrypoint", entry[0] if entry else ""]
    run += _options(_dict(info.get("HostConfig")), config, nofile)
    for item in env:
        if item.split("=", 1)[0] not in unset:
            run += ["-e", item]
    run += [str(info["Image"]), *entry[1:], *(str(w) for w in _list(config.get("Cmd")))]
    drop = f"{{ {shlex.join((docker, 'rm', '-f', copy))} >/dev/null 2>&1 || true; }}"
    base = f"{drop} && {shlex.join((docker, 'restart', name))}"
    fix = f"{shlex.join((docker, 'stop', name))} && {drop} && {shlex.join(run)}"
    return ArmCommand("base", base), ArmCommand("fix", fix)
