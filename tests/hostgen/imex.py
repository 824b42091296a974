"""NVIDIA IMEX on a multi-node NVLink compute tray: the ``nvidia-imex`` service, its config and nodes config, its log,
and the IMEX channel device the driver registers.

Sources: NVIDIA's IMEX guide (docs.nvidia.com/multi-node-nvlink-systems/imex-guide: the ``nvidia-imex`` systemd
service, ``IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg`` listing one IP address per node of the domain,
``nvidia-caps-imex-channels`` in /proc/devices and ``/dev/nvidia-caps-imex-channels/channelN`` made by the administrator
and lost at reboot), the packaged config file's keys and the unit as AWS ParallelCluster's cookbook reproduces them
(aws/aws-parallelcluster-cookbook PR 2996), and the daemon's log lines as one printed them
(kubernetes-sigs/dra-driver-nvidia-gpu issue 289: ``IMEX version ... is running with the following configuration
options``, then ``[ERROR] ... No matching network interface found for any IP addresses in the node configuration file``).
Not shown by a public source read here, so left out: what a healthy start logs after its configuration lines,
``nvidia-imex-ctl -N``'s exact output, and what the daemon prints when its nodes config is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.units import unit_failed

if TYPE_CHECKING:
    from tests.hostgen.build import Built

CONFIG = "/etc/nvidia-imex/config.cfg"
NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
LOG = "/var/log/nvidia-imex.log"
CHANNELS = "/dev/nvidia-caps-imex-channels"
CHANNELS_MAJOR = 507
RACK_IPS = tuple(f"10.114.8.{11 + k}" for k in range(18))
"""The 18 compute trays of one NVL72 rack (their management network addresses), the same list on every tray."""
NO_INTERFACE = "No matching network interface found for any IP addresses in the node configuration file"
"""What the daemon prints when none of the nodes config's addresses is this node's (issue 289, above); how the line
ends is not shown there."""

_CONFIG_TEXT = (
    "# NVIDIA IMEX configuration file.\n"
    "# Note: This configuration file is read during IMEX startup. So, IMEX\n"
    "# service restart is required for new settings to take effect.\n\n"
    "LOG_LEVEL=4\n"
    "# LOG_FILE_NAME=/var/log/nvidia-imex.log\n"
    "LOG_APPEND_TO_LOG=1\n"
    "LOG_MAX_ROTATE_COUNT=3\n"
    "LOG_USE_SYSLOG=0\n"
    "DAEMONIZE=1\n"
    "BIND_INTERFACE_IP=\n"
    "SERVER_PORT=50000\n"
    f"IMEX_NODE_CONFIG_FILE={NODES_CONFIG}\n"
    "NETWORK_INTERFACE=\n"
    "IMEX_WAIT_FOR_QUORUM=RECOVERY\n"
    "IMEX_ENABLE_AUTH_ENCRYPTION=0\n"
    "IMEX_CMD_ENABLED=1\n"
    "IMEX_CMD_PORT=50005\n"
    "IMEX_NODE_DISCONNECTED_GRACE_TIME=-1\n"
)
_UNIT = (
    "[Unit]\nDescription=NVIDIA IMEX service\nAfter=network-online.target\nRequires=network-online.target\n\n"
    "[Service]\nUser=root\nPrivateTmp=false\nType=forking\nTimeoutStartSec=infinity\n\n"
    f"ExecStart=/usr/bin/nvidia-imex -c {CONFIG}\n\nLimitCORE=infinity\n\nRestart=on-failure\nRestartSec=1s\n\n"
    "[Install]\nWantedBy=multi-user.target\n"
)


def _log_head(version: str) -> list[str]:
    at = "[Nov 30 2026 09:58:21] [INFO] [tid 2411]"
    return [
        "IMEX Log initializing at: 11/30/2026 09:58:21.114",
        f"{at} IMEX version {version} is running with the following configuration options",
        f"{at} Logging level = 4",
        f"{at} Logging file name/path = {LOG}",
        f"{at} Append to log file = 1",
        f"{at} Max Log file size = 1024 (MBs)",
        f"{at} Use Syslog file = 0",
        f"{at} IMEX Library communication bind interface = ",
        f"{at} IMEX library communication bind port = 50000",
    ]


def write_imex(built: Built) -> None:
    """The IMEX service as ``spec.driver.imex`` says (``active``, ``failed``; None: not installed)."""
    tree, d = built.tree, built.spec.driver
    unit = ("systemctl", "is-active", "nvidia-imex")
    if d.imex is None:
        tree.command(unit, "inactive\n", exit_code=4)
        return
    tree.file(CONFIG, _CONFIG_TEXT)
    tree.file(NODES_CONFIG, "\n".join(RACK_IPS) + "\n")
    tree.file("/lib/systemd/system/nvidia-imex.service", _UNIT)
    tree.command(unit, d.imex + "\n", exit_code=0 if d.imex == "active" else 3)
    tree.file(LOG, "\n".join(_log_head(d.version)) + "\n")
    if d.imex != "active":
        unit_failed(built, "nvidia-imex", "NVIDIA IMEX service", [])


def imex_failed(built: Built, message: str | None) -> None:
    """The daemon stopped at start: ``message`` (its own [ERROR] line, None: it printed none) ends its log and is in
    the unit's journal."""
    tree = built.tree
    lines = _log_head(built.spec.driver.version)
    said = [] if message is None else [("nvidia-imex[2411]", message)]
    if message is not None:
        lines.append(f"[Nov 30 2026 09:58:21] [ERROR] [tid 2411] {message}")
    tree.file(LOG, "\n".join(lines) + "\n")
    unit_failed(built, "nvidia-imex", "NVIDIA IMEX service", said)


def imex_proc_devices(built: Built) -> str:
    """The /proc/devices line of the IMEX channels' character device (every driver since IMEX channels registers it)."""
    return f"{CHANNELS_MAJOR} nvidia-caps-imex-channels\n" if built.spec.driver.imex is not None else ""
