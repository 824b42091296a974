"""What driver.imex reads: the nvidia-imex service, its config and nodes config, the IMEX channel devices, and the
service's own account of a failed start (bounded reads, as for the fabric manager).

Paths and names are NVIDIA's IMEX guide's (docs.nvidia.com/multi-node-nvlink-systems/imex-guide): the systemd service
``nvidia-imex``, its config ``/etc/nvidia-imex/config.cfg`` whose ``IMEX_NODE_CONFIG_FILE`` (default
``/etc/nvidia-imex/nodes_config.cfg``) lists one IP address per node of the IMEX domain, its log
``/var/log/nvidia-imex.log``, and the ``nvidia-caps-imex-channels`` character device the driver registers, whose nodes
``/dev/nvidia-caps-imex-channels/channelN`` the administrator creates (they do not survive a reboot).
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.unit_reasons import UnitLog, read_unit
from rigaudit.tools.core.record import Record, replace
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, command_ref, dir_ref, file_ref

IMEX_UNIT = "nvidia-imex"
IMEX_CONFIG = "/etc/nvidia-imex/config.cfg"
IMEX_NODES = "/etc/nvidia-imex/nodes_config.cfg"
IMEX_LOG = "/var/log/nvidia-imex.log"
IMEX_CHANNELS = "/dev/nvidia-caps-imex-channels"
IS_ACTIVE = ("systemctl", "is-active", IMEX_UNIT)
_NODE_LINE = r"\s*([0-9A-Fa-f.:]+)\s*(?:#.*)?"


class ImexFacts(Record):
    state: CommandResult
    nodes_path: str
    nodes: tuple[str, ...] | None
    """The addresses the nodes config lists (None: the file could not be read)."""
    nodes_error: str | None
    channels: tuple[str, ...] | None
    """Entries of /dev/nvidia-caps-imex-channels (None: the folder is absent or unreadable)."""
    registered: bool | None
    """/proc/devices names nvidia-caps-imex-channels (None: /proc/devices unread)."""
    log: UnitLog | None = None
    """The unit's own account of its last start (read only when it is not active)."""

    @property
    def active(self) -> str | None:
        """``systemctl is-active``'s answer (``active``, ``failed``...), None when it gave none."""
        result = self.state
        return result.stdout.strip().splitlines()[0] if result.error is None and result.stdout.strip() else None

    @property
    def refs(self) -> tuple[str, ...]:
        return (command_ref(IS_ACTIVE), file_ref(IMEX_CONFIG), file_ref(self.nodes_path), dir_ref(IMEX_CHANNELS))


def _nodes_path(config: str | None) -> str:
    """IMEX_NODE_CONFIG_FILE as the config sets it (the last assignment wins), else the default."""
    found = re.findall(r"(?m)^\s*IMEX_NODE_CONFIG_FILE\s*=\s*(\S+)\s*$", config or "")
    return found[-1] if found else IMEX_NODES


async def collect_imex(probe: Probe, proc_devices: str | None) -> ImexFacts:
    state = await probe.run(IS_ACTIVE)
    config = await probe.read(IMEX_CONFIG)
    path = _nodes_path(config.text())
    nodes = await probe.read(path)
    text = nodes.text()
    listed = None if text is None else tuple(m.group(1) for line in text.splitlines() if (m := re.fullmatch(_NODE_LINE, line)))
    channels = await probe.list_dir(IMEX_CHANNELS)
    facts = ImexFacts(
        state=state,
        nodes_path=path,
        nodes=listed,
        nodes_error=nodes.error,
        channels=channels.entries,
        registered=None if proc_devices is None else "nvidia-caps-imex-channels" in proc_devices,
    )
    if facts.active not in (None, "active"):
        facts = replace(facts, log=await read_unit(probe, IMEX_UNIT, IMEX_LOG))
    return facts
