"""Fleets over real OpenSSH: eight namespace hosts (one with a degraded link, one with another
driver) plus one that refuses connections, audited through ``rigaudit audit --hosts``; and this
machine behind a loopback sshd, without rigaudit, collected by the node server."""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.commands._fleet import run_fleet_from_args
from rigaudit.orchestrator.commands.audit import COMMAND as AUDIT
from rigaudit.orchestrator.fleet.result import FleetResult
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_fleet
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.remote.client import RemoteHost
from rigaudit.tools.remote.session import collect_node
from rigaudit.tools.remote.tarstream import extract_snapshot_tar
from rigaudit.tools.remote.transport import SshTransport, node_script
from tests.support.fleet import NEW_DRIVER, LoopbackSshd, NamespaceFleet, fleet_snapshots, namespace_fleet

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"
DEGRADED, OTHER_DRIVER = 3, 6  # node3 serves the degraded link, node6 the other driver


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[NamespaceFleet]:
    with namespace_fleet(tmp_path / "fleet") as hosts:  # skips first when namespaces or sshd are missing
        snapshots = fleet_snapshots(SEED)
        for number in range(1, 9):
            served = {DEGRADED: snapshots.degraded, OTHER_DRIVER: snapshots.other_driver}.get(number, snapshots.base)
            hosts.add_node(served)
        hosts.add_node(None, serve=False)  # node9: up, but no sshd
        yield hosts


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    AUDIT.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_eight_namespace_hosts_over_ssh_with_the_outliers_named(
    fleet: NamespaceFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts_file = tmp_path / "fleet.hosts"
    hosts_file.write_text("# the rack\n" + "".join(f"{n.alias}\n" for n in fleet.nodes))
    out = tmp_path / "out"
    assert fleet.ssh_config is not None
    args = _args(
        "--hosts", str(hosts_file), "--ssh-command", fleet.ssh_command, "--ssh-config", str(fleet.ssh_config),
        "--out", str(out), "--no-live", "--host-timeout", "60",
    )  # fmt: skip
    assert run_fleet_from_args(args) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "fleet.json").read_text())

    audited = [h["target"] for h in data["hosts"]]
    assert audited == [f"node{n}" for n in range(1, 9)]
    assert {h["mode"] for h in data["hosts"]} == {"installed"}  # each node ran its own rigaudit snapshot --stdout
    assert [(f["target"], f["stage"]) for f in data["failures"]] == [("node9", "connect")]
    assert "Connection refused" in data["failures"][0]["error"]

    named = {(o["host"], o["key"], o["value"]) for o in data["outliers"]}
    assert (f"node{DEGRADED}", "pcie.link", "problem") in named
    assert (f"node{DEGRADED}", "GPU3 PCIe link", "16.0 GT/s x8") in named
    assert (f"node{OTHER_DRIVER}", "driver", NEW_DRIVER) in named
    assert {o["host"] for o in data["outliers"]} == {f"node{DEGRADED}", f"node{OTHER_DRIVER}"}
    assert f"outlier node{DEGRADED}: GPU3 PCIe link is 16.0 GT/s x8; 7 of 8 hosts: 32.0 GT/s x16" in printed
    assert "failed node9 (connect)" in printed

    everywhere = next(g for g in data["plan"] if g["step"]["check"] == "numa.balancing")
    assert everywhere["hosts"] == audited
    report = (out / "system-improve.md").read_text()
    assert f"- **node{OTHER_DRIVER}**: driver = **{NEW_DRIVER}**; 7 of 8 hosts: 580.95.05" in report
    for name in audited:
        assert json.loads((out / "hosts" / name / "audit.json").read_text())["host"]["source"] == f"ssh:{name}"
        assert (out / "hosts" / name / "system-improve.md").is_file()
        extract_snapshot_tar((out / "hosts" / name / "snapshot.tar.gz").read_bytes(), tmp_path / "kept" / name)
        assert SnapshotHost(tmp_path / "kept" / name).name == "gpu-node"  # the evidence, kept as it came


@pytest.fixture
def bare_node(tmp_path: Path) -> Iterator[LoopbackSshd]:
    with LoopbackSshd.start(tmp_path / "node") as node:
        yield node


def _server_processes() -> list[int]:
    """Processes still running the bootstrap (a node must not keep any once the session ends)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"exec(base64.b64decode(sys.argv[1]))" in cmdline:
                found.append(int(entry.name))
    return found


def test_a_node_without_rigaudit_gets_the_zipapp_and_keeps_nothing(bare_node: LoopbackSshd, tmp_path: Path) -> None:
    transport = SshTransport(config=bare_node.ssh_config)
    # The node's own python3 has neither rigaudit nor pydantic.
    check = subprocess.run(
        transport.argv("127.0.0.1", 'command -v rigaudit || python3 -c "import pydantic" 2>&1 | tail -1'),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "No module named 'pydantic'" in check.stdout

    seen: list[tuple[str, str | None]] = []

    async def with_server(host: RemoteHost) -> None:
        seen.append(((await host.read("/proc/sys/kernel/osrelease")).text() or "", (await host.run(["uname", "-r"])).stdout))

    async def session() -> object:
        argv = transport.argv("127.0.0.1", node_script("auto"))
        return await collect_node(argv, source="ssh:127.0.0.1", with_server=with_server)

    got = anyio.run(session)
    assert getattr(got, "mode") == "server"  # noqa: B009
    hello = getattr(got, "hello")  # noqa: B009
    assert hello["no_site"] and hello["isolated"] and hello["pydantic_loaded"] is False
    local = (anyio.run(LocalHost().read, "/proc/sys/kernel/osrelease")).text()
    assert seen == [(local, local)]
    assert list(bare_node.home.iterdir()) == [] and _server_processes() == []


def test_the_node_server_fleet_audits_this_machine_like_a_local_snapshot(bare_node: LoopbackSshd, tmp_path: Path) -> None:
    async def main() -> FleetResult:
        transport = SshTransport(config=bare_node.ssh_config)
        return await run_fleet(["127.0.0.1"], transport, FleetOptions(out=tmp_path / "out", workers=0))

    result = anyio.run(main)
    assert result.failures == () and [a.mode for a in result.audits] == ["server"]
    audit = result.audits[0].result
    snapshot = tmp_path / "snapshot"
    extract_snapshot_tar((tmp_path / "out" / "hosts" / "127.0.0.1" / "snapshot.tar.gz").read_bytes(), snapshot)
    replayed = SnapshotHost(snapshot)
    local = anyio.run(LocalHost().read, "/proc/cmdline")
    assert anyio.run(replayed.read, "/proc/cmdline").data == local.data
    assert audit.host.source == "ssh:127.0.0.1" and audit.host.facts.get("kernel")
    assert len(audit.findings) > 30 and all(run.status == "done" for run in audit.investigators)
