"""GPU time-slicing by the NVIDIA Kubernetes device plugin, as a node shows it (:data:`~rigaudit.agents.facts.
deliberate.TIME_SLICING`).

Read on the node, first from the labels GPU feature discovery writes for NFD (``nvidia.com/gpu.replicas``,
``nvidia.com/gpu.sharing-strategy`` in :data:`GFD_FEATURES`), else from the device plugin's own config: the file its
``CONFIG_FILE`` environment names, read through ``/proc/PID/root`` of the plugin's process (comm ``nvidia-device-p``,
the name cut to 15 characters), whose ``sharing.timeSlicing.resources`` give ``replicas``. In a pod neither is visible:
the node's labels are what would tell.
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.processes import parse_environ
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

GFD_FEATURES = "/etc/kubernetes/node-feature-discovery/features.d/gfd"
PLUGIN_COMM = "nvidia-device-p"
_LABEL = r"(?m)^nvidia\.com/gpu\.replicas=(\d+)\s*$"
_CONFIG = r"timeSlicing:\s*\n(?:\s+.*\n)*?\s+replicas:\s*(\d+)"


class TimeSlicing(Record):
    replicas: int | None
    """Replicas per GPU (1: no sharing; None: not read)."""
    how: str
    refs: tuple[str, ...] = ()

    @property
    def shared(self) -> bool:
        return self.replicas is not None and self.replicas > 1


async def read_time_slicing(probe: Probe, plugin_pids: tuple[int, ...], in_container: bool) -> TimeSlicing:
    """The device plugin's time-slicing on this node (``plugin_pids``: processes whose comm is the plugin's)."""
    if in_container:
        return TimeSlicing(None, "in a container: the node's labels (nvidia.com/gpu.replicas) would tell")
    labels = await probe.text(GFD_FEATURES)
    if labels is not None and (m := re.search(_LABEL, labels)) is not None:
        return TimeSlicing(int(m.group(1)), f"{GFD_FEATURES}: nvidia.com/gpu.replicas={m.group(1)}", (file_ref(GFD_FEATURES),))
    for pid in plugin_pids[:2]:
        env = parse_environ((await probe.read(f"/proc/{pid}/environ")).data) or {}
        path = env.get("CONFIG_FILE")
        text = await probe.text(f"/proc/{pid}/root{path}") if path else None
        if text is None:
            continue
        ref = file_ref(f"/proc/{pid}/root{path}")
        m = re.search(_CONFIG, text)
        replicas = int(m.group(1)) if m else 1
        return TimeSlicing(replicas, f"the device plugin's config {path} (pid {pid}): timeSlicing replicas {replicas}", (ref,))
    if plugin_pids:
        return TimeSlicing(None, f"the device plugin (pid {plugin_pids[0]}) runs but its config was not read")
    return TimeSlicing(1, "no NVIDIA device plugin on this node")
