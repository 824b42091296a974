"""Rebuilding a snapshot from tool calls: links, placeholders, and a real audit of the seed."""

from __future__ import annotations

import base64
import json
import posixpath
from pathlib import Path

import anyio

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, NvmlResult
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.audit import ToolCall
from rigaudit.tools.schema.events.session import SessionStarted
from rigaudit.tools.schema.events.union import Event
from rigaudit.transcripts.rebuild import NOT_RECORDED, rebuild_snapshot, verify_rebuild
from rigaudit.transcripts.tool_calls import host_result, tool_call_from_probe

GPU = "/sys/bus/pci/devices/0000:41:00.0"
REAL = "/sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0"


def _read(path: str, data: bytes | None, error: str | None = None) -> ToolCall:
    return tool_call_from_probe("pcie", f"file:{path}", FileResult(path, data, error))


def _calls() -> list[Event]:
    return [
        SessionStarted(command="audit", host="synthetic"),
        tool_call_from_probe("pcie", f"link:{GPU}", (GPU, "../../../devices/pci0000:40/0000:40:01.1/0000:41:00.0")),
        _read(f"{GPU}/config", b"\xde\x10\x00\x2c"),
        _read(f"{REAL}/config", b"\xde\x10\x00\x2c"),
        _read(posixpath.dirname(REAL) + "/config", b"\x22\x10\x01\x14"),  # the upstream bridge
        tool_call_from_probe("pcie", f"link:{GPU}/driver", (f"{GPU}/driver", "../../../../bus/pci/drivers/nvidia")),
        _read("/sys/bus/pci/devices/0000:03:00.0/vendor", b"0x10de\n"),  # its link was never read
        tool_call_from_probe(
            "pcie", "link:/sys/bus/pci/devices/0000:03:00.0/vendor", ("/sys/bus/pci/devices/0000:03:00.0/vendor", None)
        ),
        tool_call_from_probe(
            "pcie",
            "dir:/sys/bus/pci/devices",
            DirResult("/sys/bus/pci/devices", ("0000:03:00.0", "0000:41:00.0", "0000:99:00.0")),
        ),
        tool_call_from_probe("pcie", f"dir:{GPU}", DirResult(GPU, ("config", "driver"))),
        tool_call_from_probe("firmware", "dir:/sys/firmware/efi", DirResult("/sys/firmware/efi", ())),
        tool_call_from_probe("firmware", "dir:/nonexistent", DirResult("/nonexistent", None, "ENOENT")),
        _read("/etc/shadow", None, "EACCES"),
        _read("/nope", None, "ENOENT"),
        _read("/sys/class", None, "EISDIR"),
        tool_call_from_probe("container", "exists:/.dockerenv", ("/.dockerenv", False)),
        tool_call_from_probe("container", "exists:/dev/nvidia0", ("/dev/nvidia0", True)),
        tool_call_from_probe("kernel", "cmd:uname -r", CommandResult(("uname", "-r"), 0, "6.8.12-4-pve\n", "", 0.01)),
        tool_call_from_probe("pcie", "cmd:lspci -vvv", CommandResult(("lspci", "-vvv"), error="not_found")),
        tool_call_from_probe("pcie", "cmd:foo", CommandResult(("foo",), error="not_recorded", stderr="not recorded")),
        tool_call_from_probe("gpu", "nvml:nvmlInit()", NvmlResult("nvmlInit", ())),
        tool_call_from_probe("gpu", "nvml:nvmlDeviceGetCount()", NvmlResult("nvmlDeviceGetCount", (), 8)),
        tool_call_from_probe("gpu", "nvml:nvmlDeviceGetMemoryInfo(0)", NvmlResult("nvmlDeviceGetMemoryInfo", (0,), {"total": 1})),
        tool_call_from_probe("nvlink", "nvml:...", NvmlResult("nvmlDeviceGetNvLinkState", (0, 0), error="NOT_SUPPORTED")),
    ]


def test_tool_call_encoding_round_trips() -> None:
    for event in _calls():
        if isinstance(event, ToolCall):
            result = host_result(event)
            assert result is not None
            again = tool_call_from_probe(event.area, "", result)
            assert again.model_dump(exclude={"t"}) == event.model_dump(exclude={"t"})
    call = _read("/x", b"\x00\x01")
    assert call.op == "read" and call.result == {"data_b64": base64.b64encode(b"\x00\x01").decode()}
    run = tool_call_from_probe("a", "cmd:uname -r", CommandResult(("uname", "-r"), 0, "6\n"))
    assert (run.op, run.target, run.args) == ("run", "uname -r", ["uname", "-r"])
    nvml = tool_call_from_probe("a", "", NvmlResult("nvmlDeviceGetP2PStatus", (0, 1, 0), error="NOT_SUPPORTED"))
    assert (nvml.target, nvml.args, nvml.result) == ("nvmlDeviceGetP2PStatus", [0, 1, 0], {"error": "NOT_SUPPORTED"})


def test_every_recorded_operation_reads_back_the_same(tmp_path: Path) -> None:
    events = _calls()
    root = tmp_path / "snap"
    report = rebuild_snapshot(events, root)
    assert report.warnings == []
    assert anyio.run(verify_rebuild, events, root) == []
    links = json.loads((root / "links.json").read_text())
    assert links[GPU].endswith("0000:41:00.0")
    assert f"{REAL}/driver" in links  # keyed by its resolved folder, as SnapshotHost looks it up
    assert (root / "files" / REAL.lstrip("/") / "config").read_bytes() == b"\xde\x10\x00\x2c"
    assert json.loads((root / "snapshot.json").read_text())["hostname"] == "synthetic"

    async def probe_more() -> tuple[FileResult, DirResult, CommandResult, NvmlResult]:
        host = SnapshotHost(root)
        return (
            await host.read("/sys/bus/pci/devices/0000:99:00.0"),
            await host.list_dir("/sys/firmware/efi"),
            await host.run(["foo"]),
            await host.nvml("nvmlDeviceGetCount"),
        )

    unread, empty_dir, foo, count = anyio.run(probe_more)
    assert unread.error == NOT_RECORDED  # listed but never read: an honest "not recorded"
    assert empty_dir.entries == ()
    assert foo.error == "not_recorded"
    assert count.value == 8


def test_verify_names_what_reads_back_differently(tmp_path: Path) -> None:
    events = _calls()
    root = tmp_path / "snap"
    rebuild_snapshot(events, root)
    (root / "files" / "sys/bus/pci/devices/0000:03:00.0/vendor").write_bytes(b"0x8086\n")
    mismatches = anyio.run(verify_rebuild, events, root)
    assert len(mismatches) == 1 and mismatches[0].startswith("read /sys/bus/pci/devices/0000:03:00.0/vendor")


def test_probe_observer_adapter_feeds_a_rebuild(seed_dir: Path, tmp_path: Path) -> None:
    """Without run_audit: a Probe's observer alone gives tool calls that rebuild what it read."""
    from rigaudit.agents.facts.gpus import collect_gpus

    events: list[Event] = []
    probe = Probe(SnapshotHost(seed_dir), observer=lambda ref, r: events.append(tool_call_from_probe("gpu", ref, r)))
    inventory = anyio.run(collect_gpus, probe)
    root = tmp_path / "rebuilt"
    rebuild_snapshot(events, root)
    assert anyio.run(verify_rebuild, events, root) == []
    assert anyio.run(collect_gpus, Probe(SnapshotHost(root))) == inventory
