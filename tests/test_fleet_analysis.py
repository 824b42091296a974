"""A fleet of replayed nodes (local processes serving prepared snapshot streams): outliers, the
check matrix, the grouped plan, failures listed while the rest completes, and the reports."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.commands._fleet import run_fleet_from_args
from rigaudit.orchestrator.commands.audit import COMMAND as AUDIT
from rigaudit.orchestrator.fleet.analysis import fleet_plan, outliers
from rigaudit.orchestrator.fleet.report import render_fleet_report
from rigaudit.orchestrator.fleet.result import FleetResult, HostAudit
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_fleet
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.remote.tarstream import snapshot_tar_bytes
from rigaudit.tools.remote.transport import ReplayTransport
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.events.fleet import FleetFinished, HostAudited, HostFailed
from rigaudit.tools.schema.events.union import Event
from tests.support.fleet import NEW_DRIVER, OLD_DRIVER, fleet_snapshots


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[FleetResult, list[Event], Path]:
    seed = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"
    snapshots = fleet_snapshots(seed)
    folder = tmp_path_factory.mktemp("replay")
    archives: dict[str, Path] = {}
    for name, source in (("a", snapshots.base), ("d", snapshots.degraded), ("e", snapshots.other_driver)):
        archives[name] = folder / f"{name}.tar.gz"
        archives[name].write_bytes(snapshot_tar_bytes(source))
    archives["b"] = archives["c"] = archives["a"]
    archives["junk"] = folder / "junk.tar.gz"
    archives["junk"].write_bytes(b"Welcome to gpu-9! Last login: never\n")
    events: list[Event] = []
    out = folder / "out"
    targets = ["a", "b", "c", "d", "e", "ghost", "junk"]

    async def main() -> FleetResult:
        return await run_fleet(targets, ReplayTransport(archives), FleetOptions(out=out, max_connections=3), events.append)

    return anyio.run(main), events, out


def test_the_degraded_link_and_the_other_driver_are_named(replayed: tuple[FleetResult, list[Event], Path]) -> None:
    result, _, _ = replayed
    assert [a.target for a in result.audits] == ["a", "b", "c", "d", "e"]
    named = {(o.host, o.kind, o.key, o.value, o.usual) for o in result.outliers}
    assert ("d", "check", "pcie.link", "problem", "ok") in named
    assert ("d", "fact", "GPU3 PCIe link", "16.0 GT/s x8", "32.0 GT/s x16") in named
    assert ("e", "fact", "driver", NEW_DRIVER, OLD_DRIVER) in named
    assert {o.host for o in result.outliers} == {"d", "e"}
    link = next(o for o in result.outliers if o.key == "pcie.link")
    assert (link.peers, link.compared, link.severity) == (4, 5, "high") and "x8" in link.detail
    assert result.matrix["pcie.link"] == {"a": "ok", "b": "ok", "c": "ok", "d": "problem", "e": "ok"}


def test_failing_nodes_are_listed_and_the_rest_completes(replayed: tuple[FleetResult, list[Event], Path]) -> None:
    result, events, _ = replayed
    failures = {f.target: f for f in result.failures}
    assert set(failures) == {"ghost", "junk"}
    assert failures["ghost"].stage == "connect" and "Could not resolve hostname ghost" in failures["ghost"].error
    assert failures["junk"].stage == "audit" and "not a readable snapshot stream" in failures["junk"].error
    assert sum(isinstance(e, HostAudited) for e in events) == 5 and sum(isinstance(e, HostFailed) for e in events) == 2
    finished = events[-1]
    assert isinstance(finished, FleetFinished) and (finished.hosts, finished.audited) == (7, 5)
    assert {f.target for f in finished.failures} == {"ghost", "junk"} and finished.differ == len(
        {o.host for o in result.outliers}
    )
    assert all(a.mode == "installed" and a.result.host.source == f"replay:{a.target}" for a in result.audits)


def test_identical_fixes_are_grouped(replayed: tuple[FleetResult, list[Event], Path]) -> None:
    result, _, _ = replayed
    by_check = {f.step.check: f for f in result.plan}
    assert by_check["numa.balancing"].hosts == ("a", "b", "c", "d", "e")
    assert by_check["pcie.link"].hosts == ("d",)
    steps = sum(len(a.result.plan.steps) for a in result.audits)
    assert len(result.plan) < steps and sum(len(f.hosts) for f in result.plan) == steps


def test_per_host_files_and_the_fleet_report(replayed: tuple[FleetResult, list[Event], Path]) -> None:
    result, _, out = replayed
    for target in "abcde":
        folder = out / "hosts" / target
        audit = json.loads((folder / "audit.json").read_text())
        assert audit["schema"] == "rigaudit.audit/1" and audit["host"]["source"] == f"replay:{target}"
        assert (folder / "system-improve.md").read_text().startswith("# System improvement plan")
        assert (folder / "snapshot.tar.gz").read_bytes() == (
            out.parent / f"{target if target in 'ade' else 'a'}.tar.gz"
        ).read_bytes()
        assert not (folder / "snapshot").exists()
    text = render_fleet_report(result)
    assert "| ghost | connect |" in text and "| junk | audit |" in text
    assert "- **d**: GPU3 PCIe link = **16.0 GT/s x8**; 4 of 5 hosts: 32.0 GT/s x16" in text
    assert f"- **e**: driver = **{NEW_DRIVER}**" in text
    assert "| `pcie.link` | ok | ok | ok | **PROBLEM** | ok |" in text
    data = json.loads(result.to_json())
    assert data["schema"] == "rigaudit.fleet/1" and [h["target"] for h in data["hosts"]] == ["a", "b", "c", "d", "e"]
    assert data["matrix"]["pcie.link"]["d"] == "problem"


def _audit(target: str, facts: dict[str, str]) -> HostAudit:
    empty = AuditResult(host=HostSummary(name=target, source="test"), started_at="", duration_s=0.0)
    return HostAudit(target, "replay", empty, facts, 0.0, 0.0)


def test_nobody_is_an_outlier_without_a_majority() -> None:
    assert outliers([_audit("a", {"driver": "1"}), _audit("b", {"driver": "2"})]) == []
    split = [_audit(h, {"driver": v}) for h, v in (("a", "1"), ("b", "1"), ("c", "2"), ("d", "2"))]
    assert outliers(split) == []
    odd = [_audit(h, {"driver": v}) for h, v in (("a", "1"), ("b", "1"), ("c", "2"), ("d", "1"), ("e", "")) if v]
    assert [(o.host, o.value, o.usual, o.peers, o.compared) for o in outliers(odd)] == [("c", "2", "1", 3, 4)]
    assert fleet_plan(odd) == []


def test_a_node_that_hangs_is_cut_at_the_host_timeout() -> None:
    class Hanging:
        def argv(self, target: str, script: str) -> list[str]:
            return ["sh", "-c", "echo RIGAUDIT-NODE installed; exec sleep 60"]

        def source(self, target: str) -> str:
            return f"test:{target}"

    async def main() -> FleetResult:
        return await run_fleet(["slow"], Hanging(), FleetOptions(host_timeout_s=0.5, workers=0))

    result = anyio.run(main)
    assert [(f.target, f.stage, f.error) for f in result.failures] == [("slow", "timeout", "no snapshot within 0.5 s")]
    assert "Fewer than three hosts" in render_fleet_report(result)


def _args(*argv: str) -> argparse.Namespace:
    """The audit command's own parser (it carries the fleet's arguments)."""
    parser = argparse.ArgumentParser()
    AUDIT.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hosts", "a,b", "--snapshot", "x"], "leave out --snapshot"),
        (["--hosts", "a,b", "--llm"], "--llm audits one host"),  # never ignored without a word
        (["--results", "gathered", "--llm"], "--llm audits one host"),
        (["--hosts", "a", "--partition", "gpu"], "go with --slurm"),
        (["--slurm", "--nodes", "0"], "at least 1"),
        (["--hosts", "a", "--max-connections", "0"], "at least 1"),
        (["--hosts", "a", "--node-rigaudit", "rigaudit;reboot"], "plain words"),
        (["--hosts", "a", "--ssh-command", "ssh $(id)"], "plain words"),
        (["--hosts=-oProxyCommand=x"], "not a usable host name"),
        (["--hosts", "a", "--areas", "pcie,warp"], "unknown area"),
    ],
)
def test_fleet_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        run_fleet_from_args(_args(*argv, "--no-live"))


def test_fleet_arguments_do_not_clash_with_the_audit_command() -> None:
    args = _args("--hosts", "a,b", "--json", "-", "--fail-on", "high", "--no-live")
    assert args.hosts == "a,b" and args.max_connections == 16 and args.collector == "auto" and not args.slurm
    with pytest.raises(SystemExit):
        _args("--hosts", "a", "--slurm")


def test_the_judging_worker_protocol(tmp_path: Path) -> None:
    """What a pool worker does with a job, in this process: a bad archive is an error answer, not a crash."""
    import io
    import pickle
    import struct

    from rigaudit.orchestrator.fleet.pool import serve
    from rigaudit.orchestrator.fleet.worker import AuditJob, AuditOutcome

    job = AuditJob("x", "test:x", str(tmp_path / "snapshot"), archive=b"not a tar stream")
    body = pickle.dumps(job)
    out = io.BytesIO()
    assert serve(io.BytesIO(struct.pack("!Q", len(body)) + body), out) == 0
    size = struct.unpack("!Q", out.getvalue()[:8])[0]
    audited = pickle.loads(out.getvalue()[8 : 8 + size])
    assert (
        isinstance(audited, AuditOutcome)
        and audited.audit_json is None
        and "not a readable snapshot stream" in (audited.error or "")
    )
    assert not (tmp_path / "snapshot").exists()  # the scratch snapshot is removed whatever happened


def test_an_old_rigaudit_on_the_node_falls_back_to_the_node_server(tmp_path: Path) -> None:
    """A node whose rigaudit predates ``snapshot --stdout`` (usage error, exit 2) gets the zipapp instead."""
    old = tmp_path / "bin" / "rigaudit"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\necho 'rigaudit snapshot: error: unrecognized arguments: --stdout' >&2\nexit 2\n")
    old.chmod(0o755)

    class LocalShell:
        """This machine as a node, through a plain pipe (what ssh gives, without ssh)."""

        def argv(self, target: str, script: str) -> list[str]:
            return ["env", "-i", f"PATH={old.parent}:/usr/bin:/bin", f"HOME={tmp_path}", "sh", "-c", script]

        def source(self, target: str) -> str:
            return f"local:{target}"

    async def main() -> FleetResult:
        return await run_fleet(["here"], LocalShell(), FleetOptions(workers=0, areas=("kernel", "numa")))

    result = anyio.run(main)
    assert result.failures == () and [a.mode for a in result.audits] == ["server"]
    audit = result.audits[0].result
    assert any("cannot stream snapshots" in w and "unrecognized arguments" in w for w in audit.warnings)
    assert {f.area for f in audit.findings} == {"kernel", "numa"}


def test_empty_hosts_is_a_usage_error_not_a_local_audit() -> None:
    from rigaudit.orchestrator.cli import main

    assert main(["audit", "--hosts", "", "--no-live", "--no-transcript"]) == 2
