"""Kubernetes GPU time-slicing (the NVIDIA device plugin's sharing.timeSlicing), on the node and in a pod: several pods
on one GPU are the plugin's configuration, read where the node shows it (GPU feature discovery's labels, the plugin's
config); in a pod, where nothing tells, memory other pods hold is unknown, not the server's."""

from __future__ import annotations

import json
from dataclasses import replace

from rigaudit.agents.facts.deliberate import DELIBERATE, TIME_SLICING
from rigaudit.agents.investigators.cuda import INVESTIGATOR as CUDA
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import faults
from tests.hostgen.cache import snapshot
from tests.hostgen.k8s import CHECKPOINT, GFD_FEATURES, PLUGIN_CONFIG, PLUGIN_PID
from tests.hostgen.kinds import K8S_NODE_TIMESLICED, K8S_POD_TIMESLICED
from tests.hostgen.spec import Fault, HostSpec
from tests.support.investigators import audit_snapshot
from tests.support.kinds import by_check, serious


def cuda(spec: HostSpec) -> dict[str, Finding]:
    return audit_snapshot(CUDA, snapshot(spec), evidence_read=True, problem_has_fix=True)


def test_the_node_shows_the_plugins_replicas_as_the_plugin_and_the_kubelet_write_them() -> None:
    root = snapshot(K8S_NODE_TIMESLICED) / "files"
    config = (root / f"proc/{PLUGIN_PID}/root{PLUGIN_CONFIG}").read_text()
    assert "timeSlicing:" in config and "replicas: 4" in config
    checkpoint = json.loads((root / CHECKPOINT.lstrip("/")).read_text())["Data"]
    assert len(checkpoint["RegisteredDevices"]["nvidia.com/gpu"]) == 16
    ids = [d for e in checkpoint["PodDeviceEntries"] for d in e["DeviceIDs"]["-1"]]
    assert len(ids) == 8 and all(i.startswith("GPU-") and i[-3:] in ("::0", "::1") for i in ids)
    assert "kubepods" in (root / "proc/3120/cgroup").read_text()


def test_pods_sharing_gpus_by_time_slicing_on_the_node_are_no_problem() -> None:
    assert serious(K8S_NODE_TIMESLICED) == {}
    found = by_check(K8S_NODE_TIMESLICED)
    assert {c: found[c].status for c in ("cuda.memory_in_use", "cuda.foreign_processes", "cuda.compute_mode")} == dict.fromkeys(
        ("cuda.memory_in_use", "cuda.foreign_processes", "cuda.compute_mode"), "ok"
    )
    assert TIME_SLICING in DELIBERATE


def test_exclusive_process_on_time_sliced_gpus_leaves_all_but_one_replica_without_its_gpu() -> None:
    """Before: low, 'one TP worker per GPU still works', as on a host whose GPUs no one shares."""
    found = cuda(faults.exclusive_on_time_sliced(K8S_NODE_TIMESLICED))["cuda.compute_mode"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert "nvidia.com/gpu.replicas=4" in found.observed and TIME_SLICING.key in found.explanation
    assert "3 of each GPU's replicas" in found.explanation
    assert found.fix is not None and found.fix.where == "host" and found.fix.actions[0].argv[-2:] == ("-c", "0")


def test_without_the_labels_the_plugins_own_config_tells() -> None:
    def no_labels(built: object) -> None:
        built.tree.remove(GFD_FEATURES)  # type: ignore[attr-defined]

    spec = faults.exclusive_on_time_sliced(K8S_NODE_TIMESLICED)
    spec = replace(spec, faults=(*spec.faults, Fault("no-gfd", "no GPU feature discovery labels", no_labels)))
    found = cuda(spec)["cuda.compute_mode"]
    assert (found.status, found.severity) == ("problem", "high"), found.observed
    assert f"the device plugin's config {PLUGIN_CONFIG} (pid {PLUGIN_PID}): timeSlicing replicas 4" in found.observed


def test_memory_other_pods_hold_on_a_shared_gpu_is_unknown_in_the_pod_not_the_servers() -> None:
    """In the pod NVML counts the other pod's 35 GiB in the GPU's memory but lists only this pod's process, and
    nothing there tells that the GPU is shared on purpose. Before: ok, 'held by the inference server only'."""
    assert serious(K8S_POD_TIMESLICED) == {}
    found = by_check(K8S_POD_TIMESLICED)["cuda.memory_in_use"]
    assert found.status == "unknown", found.observed
    assert "35.2 GiB of it by processes NVML does not list in this container" in found.observed
    assert "nvidia.com/gpu.replicas" in found.observed
