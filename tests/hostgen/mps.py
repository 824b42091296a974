"""NVIDIA MPS on a host: the control daemon a unit starts, the MPS server it spawns for the first client, the pipe and
log directories, and what NVML and nvidia-smi show of it (``DriverSpec.mps``).

From NVIDIA's MPS documentation (docs.nvidia.com/deploy/mps): ``nvidia-cuda-mps-control -d`` starts the control
daemon; the pipe directory defaults to /tmp/nvidia-mps and the logs to /var/log/nvidia-mps (``control.log``,
``server.log``); the daemon spawns one ``nvidia-cuda-mps-server`` as the user of the first client; EXCLUSIVE_PROCESS
compute mode is recommended so that only the MPS server opens the GPUs; a client needs no environment variable when
the default pipe directory is used; ``nvidia-smi`` lists the server as a ``C`` process and its clients as ``M+C``.
The unit file is of the form public recipes give (no packaged unit ships with the driver); the server's own GPU memory
(30 MiB here) and the exact log wording are of the form public logs show, not read off one host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.procs import Proc

if TYPE_CHECKING:
    from tests.hostgen.build import Built

UNIT = "nvidia-mps"
PIPE = "/tmp/nvidia-mps"
LOGS = "/var/log/nvidia-mps"
CONTROL_PID = 2901
SERVER_PID = 2950
SERVER_MIB = 30
UNIT_FILE = (
    "[Unit]\n"
    "Description=NVIDIA CUDA Multi-Process Service control daemon\n"
    "After=nvidia-persistenced.service\n"
    "Before=vllm.service\n\n"
    "[Service]\n"
    "Type=forking\n"
    f"Environment=CUDA_MPS_PIPE_DIRECTORY={PIPE}\n"
    f"Environment=CUDA_MPS_LOG_DIRECTORY={LOGS}\n"
    "ExecStartPre=/usr/bin/nvidia-smi -c EXCLUSIVE_PROCESS\n"
    "ExecStart=/usr/bin/nvidia-cuda-mps-control -d\n"
    "ExecStop=/bin/sh -c 'echo quit | /usr/bin/nvidia-cuda-mps-control'\n"
    "ExecStopPost=/usr/bin/nvidia-smi -c DEFAULT\n\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n"
)


PLUGIN_PIPE = "/mps/nvidia.com/gpu/pipe"
PLUGIN_LOG = "/mps/nvidia.com/gpu/log"
"""The pipe and log directories the NVIDIA device plugin's MPS daemon uses for the resource nvidia.com/gpu and passes
to its clients (``CUDA_MPS_PIPE_DIRECTORY`` and ``CUDA_MPS_LOG_DIRECTORY``, the plugin's ``Daemon.Envvars``; the daemon
runs in a chroot where the node's /run/nvidia/mps is /mps). That a client container sees the pipe directory at the
same path is of the form the plugin's code gives, not read off one pod."""


def plugin_mps(built: Built) -> bool:
    """A container whose servers are given a pipe directory (a device plugin's MPS on the node); a container with MPS
    and no such variable runs its own daemon (the MPS guide's default pipe, started by its entrypoint)."""
    return built.container and any("CUDA_MPS_PIPE_DIRECTORY" in dict(p.env) for p in built.spec.processes)


def add_server_rows(built: Built) -> None:
    """The daemon and its server as processes, and the server's own row on every GPU its clients hold (after the
    servers' rows: they are its clients). In a pod given a GPU the device plugin shares by MPS only its own servers,
    as MPS clients: the node's daemon and server are not in its PID namespace."""
    if not built.spec.driver.mps:
        return
    if plugin_mps(built):
        for rows in built.gpu_process_map.values():
            built.mps_clients.update(pid for pid, _, _, _ in rows)
        return
    from tests.hostgen.nvidia import NO_INSTANCE

    cgroup = "0::/\n" if built.container else f"0::/system.slice/{UNIT}.service\n"
    env = {"CUDA_MPS_PIPE_DIRECTORY": PIPE, "CUDA_MPS_LOG_DIRECTORY": LOGS}
    built.procs[CONTROL_PID] = Proc(
        CONTROL_PID, ("nvidia-cuda-mps-control", "-d"), comm="nvidia-cuda-mps", cgroup=cgroup, env=env, vm_kib=12000
    )
    built.procs[SERVER_PID] = Proc(
        SERVER_PID,
        ("nvidia-cuda-mps-server",),
        comm="nvidia-cuda-mps",
        ppid=CONTROL_PID,
        cgroup=cgroup,
        env=env,
        vm_kib=3_400_000,
    )
    for rows in built.gpu_process_map.values():
        built.mps_clients.update(pid for pid, _, _, _ in rows)
        rows.insert(0, (SERVER_PID, SERVER_MIB << 20, NO_INSTANCE, NO_INSTANCE))


def _logs(built: Built) -> tuple[str, str]:
    day = "2026-11-30 09:58"
    control = [
        f"[{day}:14.201 Control {CONTROL_PID}] Starting control daemon using socket {PIPE}/control",
        f"[{day}:14.202 Control {CONTROL_PID}] To connect CUDA applications to this daemon, set env "
        f"CUDA_MPS_PIPE_DIRECTORY={PIPE}",
    ]
    server = [f"[{day}:31.540 Other {SERVER_PID}] Startup", f"[{day}:31.541 Other {SERVER_PID}] Connecting to control daemon"]
    for pid in sorted(built.mps_clients):
        control.append(f"[{day}:31.512 Control {CONTROL_PID}] Accepting connection...")
        control.append(f"[{day}:31.533 Control {CONTROL_PID}] NEW CLIENT {pid} from user 0: Server already exists")
        server.append(f"[{day}:31.602 Other {SERVER_PID}] New client {pid} connected")
    control.insert(3, f"[{day}:31.539 Control {CONTROL_PID}] Starting new server {SERVER_PID} for user 0")
    return "\n".join(control) + "\n", "\n".join(server) + "\n"


def write_mps(built: Built) -> None:
    """The unit that starts the daemon, the pipe and log directories (a host); in a pod, the plugin's pipe directory
    mounted in."""
    if not built.spec.driver.mps:
        return
    if plugin_mps(built):
        for pipe in ("control", "control_lock", "control_privileged"):
            built.tree.unreadable[f"{PLUGIN_PIPE}/{pipe}"] = "NOT_RECORDED"
        return
    tree = built.tree
    if not built.container:
        tree.file(f"/etc/systemd/system/{UNIT}.service", UNIT_FILE)
        tree.command(("systemctl", "is-active", UNIT), "active\n")
    for pipe in ("control", "control_lock", "control_privileged"):
        tree.unreadable[f"{PIPE}/{pipe}"] = "NOT_RECORDED"
    control, server = _logs(built)
    tree.file(f"{LOGS}/control.log", control)
    tree.file(f"{LOGS}/server.log", server)
