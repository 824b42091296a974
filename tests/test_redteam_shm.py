"""container.shm as the gate's own container sees it: a DaemonSet (``hostPID``, Kubernetes' 64 MiB /dev/shm) that
runs ``rigaudit check`` on every GPU node must judge the workloads' /dev/shm, not its own, or every node fails."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from rigaudit.agents.investigators.container import INVESTIGATOR
from rigaudit.orchestrator.audit.run import AuditOptions, run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES
from tests.hostgen.cache import snapshot
from tests.support.mutate import light_copy, set_file

SERVER_PIDS = (1, 2, 3, 4, 5)
SELF = 412
"""The pod's vLLM (PID 1 and its workers) and the process that recorded the snapshot."""
SMALL = "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n"


def shm_finding(root: Path) -> Finding:
    async def run() -> Finding:
        host = SnapshotHost(root)
        try:
            result = await run_audit(host, options=AuditOptions(investigators=(INVESTIGATOR,)))
        finally:
            await host.aclose()
        return next(f for f in result.findings if f.check == "container.shm")

    return anyio.run(run)


def daemonset(tmp_path: Path, *, serving: bool) -> Path:
    """The pod's node seen from a health-check container with hostPID: the servers in another mount namespace,
    this container's /dev/shm Kubernetes' 64 MiB default."""
    root = light_copy(snapshot(ARCHETYPES["k8s-pod-h100"]), tmp_path / "node")
    links = json.loads((root / "links.json").read_text())
    for pid in SERVER_PIDS:
        links[f"/proc/{pid}/ns/mnt"] = "mnt:[4026531840]"
        if not serving:
            set_file(root, f"/proc/{pid}/cmdline", "/sbin/init\x00")
            set_file(root, f"/proc/{pid}/comm", "systemd\n")
    (root / "links.json").write_text(json.dumps(links))
    mounts = (root / "files" / "proc" / str(SELF) / "mounts").read_text()
    set_file(root, f"/proc/{SELF}/mounts", "".join(SMALL if " /dev/shm " in line else line for line in mounts.splitlines(True)))
    return root


def test_the_pod_itself_is_judged_as_before() -> None:
    assert shm_finding(snapshot(ARCHETYPES["k8s-pod-h100"])).status == "ok"


def test_a_health_check_container_judges_the_servers_shm_not_its_own(tmp_path: Path) -> None:
    found = shm_finding(daemonset(tmp_path, serving=True))
    assert found.status == "ok", found
    assert "this container" not in found.observed and "16384 MiB" in found.observed


def test_a_health_check_container_on_an_idle_node_is_not_a_problem(tmp_path: Path) -> None:
    found = shm_finding(daemonset(tmp_path, serving=False))
    assert found.status == "not_applicable", found


def test_a_small_shm_where_the_server_runs_is_still_high(tmp_path: Path) -> None:
    root = light_copy(snapshot(ARCHETYPES["k8s-pod-h100"]), tmp_path / "pod")
    mounts = (root / "files" / "proc" / str(SELF) / "mounts").read_text()
    small = "".join(SMALL if " /dev/shm " in line else line for line in mounts.splitlines(True))
    set_file(root, f"/proc/{SELF}/mounts", small)
    found = shm_finding(root)
    assert found.status == "problem" and found.severity == "high", found
