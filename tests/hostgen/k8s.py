"""A Kubernetes GPU node seen from the node (``ProcessSpec.engine == "containerd"``), with the NVIDIA device plugin's GPU
time-slicing (``HostSpec.time_slicing``: replicas per GPU). From public sources: the device plugin's config
(``version: v1``, ``flags.migStrategy``, ``sharing.timeSlicing.resources`` with ``name: nvidia.com/gpu`` and
``replicas``), read from the file its ``CONFIG_FILE`` environment names (a ConfigMap mounted in its container: the GPU
Operator's and the plugin's Helm chart's way; an AKS DaemonSet sets ``CONFIG_FILE=/opt/config/config.yaml``); each
replica advertised as a device ``<GPU UUID>::<n>`` (k8s-device-plugin's ``NewAnnotatedID``); the
node's labels ``nvidia.com/gpu.replicas`` and ``nvidia.com/gpu.sharing-strategy`` (GPU feature discovery, written to
NFD's features.d file); no memory or fault isolation between replicas (the GPU Operator's time-slicing page). The
kubelet's device checkpoint (``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint``, JSON of
``PodDeviceEntries`` and ``RegisteredDevices``) is written in the form the kubelet's checkpoint manager uses; the pod
UIDs, container ids and the checksum are stand-ins. The pods run as root (the vLLM image's user), one container each,
in the besteffort QoS slice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.hostgen.procs import Proc

if TYPE_CHECKING:
    from tests.hostgen.build import Built

PLUGIN_PID = 2610
PLUGIN_CONFIG = "/config/config.yaml"
CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
KUBEPODS = "/kubepods.slice/kubepods-besteffort.slice"
GFD_FEATURES = "/etc/kubernetes/node-feature-discovery/features.d/gfd"
"""Where GPU feature discovery writes its labels for NFD to publish (its ``--output-file`` default)."""


def pod_uid(k: int) -> str:
    return f"7c1e{k:04x}-2b4d-4f6a-8c9e-0a1b2c3d4e{k:02x}"


def pod_cgroup(k: int) -> str:
    """The cgroup of the ``k``-th pod's container (systemd cgroup driver, containerd)."""
    uid = pod_uid(k).replace("-", "_")
    return f"0::{KUBEPODS}/kubepods-besteffort-pod{uid}.slice/cri-containerd-{k:02x}{'5d3e9a1c' * 7}{k:02x}.scope\n"


def plugin_config(replicas: int) -> str:
    return (
        "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
        f"    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
    )


def _checkpoint(built: Built, replicas: int) -> str:
    uuids = [f"GPU-{g.uuid}" for g in built.gpu_states]
    registered = [f"{u}::{n}" for u in uuids for n in range(replicas)]
    entries = []
    taken: dict[int, int] = {}
    for k, server in enumerate(s for s in built.spec.processes if s.engine == "containerd"):
        gpu = server.gpus[0] if server.gpus else 0
        replica = taken.get(gpu, 0)
        taken[gpu] = replica + 1
        entries.append(
            {
                "PodUID": pod_uid(k),
                "ContainerName": "vllm",
                "ResourceName": "nvidia.com/gpu",
                "DeviceIDs": {"-1": [f"{uuids[gpu]}::{replica}"]},
                "AllocResp": "",
            }
        )
    data = {"PodDeviceEntries": entries, "RegisteredDevices": {"nvidia.com/gpu": registered}}
    return json.dumps({"Data": data, "Checksum": 2871503946})


def write_node(built: Built) -> None:
    """The device plugin's process and its config, the kubelet's device checkpoint (a node whose servers run in pods)."""
    spec = built.spec
    if built.container or not any(s.engine == "containerd" for s in spec.processes):
        return
    replicas = spec.time_slicing or 1
    env = {"CONFIG_FILE": PLUGIN_CONFIG, "NVIDIA_MIG_MONITOR_DEVICES": "all", "NVIDIA_VISIBLE_DEVICES": "all"}
    built.procs[PLUGIN_PID] = Proc(
        PLUGIN_PID,
        ("nvidia-device-plugin",),
        comm="nvidia-device-p",
        env=env,
        cgroup=f"0::{KUBEPODS}/kubepods-besteffort-pod0d9e8f7a_6b5c_4d3e_2f1a_0b9c8d7e6f5a.slice/cri-containerd-4e2a.scope\n",
        mnt_ns="mnt:[4026533390]",
        vm_kib=1_300_000,
    )
    built.tree.file(f"/proc/{PLUGIN_PID}/root{PLUGIN_CONFIG}", plugin_config(replicas) if spec.time_slicing else "version: v1\n")
    built.tree.file(CHECKPOINT, _checkpoint(built, replicas))
    if spec.time_slicing:
        labels = f"nvidia.com/gpu.replicas={replicas}\nnvidia.com/gpu.sharing-strategy=time-slicing\n"
        built.tree.file(GFD_FEATURES, labels)
