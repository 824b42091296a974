"""RecordingHost, the snapshot writer, redaction and `rigaudit snapshot`: what is read replays the same."""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any

import anyio
import pytest

from rigaudit.agents.facts.gpus import collect_gpus
from rigaudit.agents.facts.platform import detect_platform
from rigaudit.agents.investigator import Investigator
from rigaudit.agents.registry import all_investigators
from rigaudit.orchestrator import cli
from rigaudit.orchestrator.hosts import snapshots as snapshot_command
from rigaudit.tools.hosts import snapshot_writer
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.recording import RecordingHost
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.hosts.snapshot_writer import SnapshotTargetError, SnapshotWriteError
from rigaudit.tools.redact import REDACTED, redact_cmdline, redact_environ, redact_file, redact_text

Op = tuple[str, Any]


async def answer(host: Host, op: Op) -> object:
    """One operation's answer in a comparable form."""
    kind, arg = op
    if kind == "read":
        r = await host.read(arg)
        return (r.data, r.error)
    if kind == "list_dir":
        d = await host.list_dir(arg)
        return (d.entries, d.error)
    if kind == "readlink":
        return await host.readlink(arg)
    if kind == "exists":
        return await host.exists(arg)
    if kind == "run":
        c = await host.run(arg)
        return (c.exit_code, c.stdout, c.stderr, c.error, c.duration_s)
    fn, *args = arg
    n = await host.nvml(fn, *args)
    return (n.value, n.error)


def redacted(op: Op, live: object) -> object:
    """What the snapshot must answer: the live answer, secrets redacted."""
    kind, arg = op
    if kind == "read" and isinstance(live, tuple) and live[0] is not None:
        return (redact_file(arg, live[0]), live[1])
    if kind == "run" and isinstance(live, tuple):
        return (live[0], redact_text(live[1]), redact_text(live[2]), *live[3:])
    return live


def _local_ops() -> list[Op]:
    devices = "/sys/bus/pci/devices"
    cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq"
    ops: list[Op] = [("read", "/proc/cmdline"), ("read", "/proc/cpuinfo"), ("list_dir", devices), ("read", devices)]
    for bdf in sorted(os.listdir(devices))[:6]:
        ops += [("readlink", f"{devices}/{bdf}")]
        ops += [("read", f"{devices}/{bdf}/{name}") for name in ("vendor", "class", "config")]
    ops += [
        ("exists", cpufreq),
        ("list_dir", cpufreq),
        ("read", f"{cpufreq}/scaling_governor"),
        ("read", "/no/such/file"),
        ("exists", "/no/such/file"),
        ("exists", "/proc/cmdline"),
        ("run", ("uname", "-r")),
        ("run", ("rigaudit-no-such-program-xyz",)),
        ("nvml", ("nvmlInit",)),
        ("nvml", ("nvmlDeviceGetCount",)),
    ]
    return ops


def test_this_machine_round_trips_through_a_snapshot(tmp_path: Path) -> None:
    ops = _local_ops()

    async def main() -> tuple[list[object], list[object]]:
        recorder = RecordingHost(LocalHost())
        try:
            live = [await answer(recorder, op) for op in ops]
            await recorder.write_snapshot(tmp_path / "snap", hostname="here", notes="round trip")
        finally:
            await recorder.aclose()
        replay = SnapshotHost(tmp_path / "snap")
        return live, [await answer(replay, op) for op in ops]

    live, replayed = anyio.run(main)
    for op, got, want in zip(ops, replayed, live, strict=True):
        assert got == redacted(op, want), op
    assert live[ops.index(("run", ("uname", "-r")))][1].strip() == os.uname().release  # type: ignore[index]
    assert live[ops.index(("nvml", ("nvmlInit",)))][1] in {"LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED"}  # type: ignore[index]
    links = json.loads((tmp_path / "snap" / "links.json").read_text())
    first = sorted(os.listdir("/sys/bus/pci/devices"))[0]
    assert links[f"/sys/bus/pci/devices/{first}"] == os.readlink(f"/sys/bus/pci/devices/{first}")
    manifest = json.loads((tmp_path / "snap" / "snapshot.json").read_text())
    assert manifest["format"] == "rigaudit.snapshot/1" and manifest["taken_by"].startswith("rigaudit ")
    assert manifest["taken_at"].endswith("Z") and manifest["hostname"] == "here"


def _record_seed(seed: Path, target: Path, work: Any) -> Any:
    """Run ``work(probe)`` over a recording of ``seed``, write the snapshot to ``target``, return its result."""

    async def main() -> Any:
        recorder = RecordingHost(SnapshotHost(seed))
        result = await work(Probe(recorder))
        await recorder.write_snapshot(target, notes="copy")
        return result

    return anyio.run(main)


def test_a_recorded_snapshot_gives_the_same_gpu_facts(seed_dir: Path, tmp_path: Path) -> None:
    async def facts(probe: Probe) -> tuple[Any, Any, dict[str, Any]]:
        return await collect_gpus(probe), await detect_platform(probe), probe.evidence

    before = _record_seed(seed_dir, tmp_path / "copy", facts)
    after = anyio.run(facts, Probe(SnapshotHost(tmp_path / "copy")))
    assert len(before[0].gpus) == 8 and before[0].nvml_ok
    assert after[0] == before[0] and after[1] == before[1]
    assert after[2] == before[2]  # every piece of evidence, byte for byte
    seed_links = json.loads((seed_dir / "links.json").read_text())
    copy_links = json.loads((tmp_path / "copy" / "links.json").read_text())
    assert copy_links and all(seed_links[k] == v for k, v in copy_links.items())
    gpu = copy_links["/sys/bus/pci/devices/0000:03:00.0"]
    resolved = posixpath.normpath(posixpath.join("/sys/bus/pci/devices", gpu))
    assert (tmp_path / "copy" / "files" / resolved.lstrip("/") / "vendor").read_bytes() == b"0x10de\n"
    assert not (tmp_path / "copy" / "files" / "sys" / "bus").exists()  # stored under the resolved path only


def test_listed_but_unread_entries_survive_as_not_recorded(seed_dir: Path, tmp_path: Path) -> None:
    async def listing(probe: Probe) -> object:
        return (await probe.list_dir("/etc/pve/lxc")).entries, await probe.exists("/etc/os-release")

    assert _record_seed(seed_dir, tmp_path / "copy", listing) == (("101.conf",), True)
    replay = SnapshotHost(tmp_path / "copy")
    assert anyio.run(replay.list_dir, "/etc/pve/lxc").entries == ("101.conf",)
    assert anyio.run(replay.read, "/etc/pve/lxc/101.conf").error == "NOT_RECORDED"
    assert anyio.run(replay.exists, "/etc/os-release")
    assert not (tmp_path / "copy" / "files" / "etc").exists()  # nothing read, nothing stored


def test_unreadable_and_absent_files(seed_dir: Path, tmp_path: Path) -> None:
    secure = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"

    async def reads(probe: Probe) -> object:
        return (await probe.read(secure)).error, (await probe.read("/etc/absent")).error

    assert _record_seed(seed_dir, tmp_path / "copy", reads) == ("EACCES", "ENOENT")
    assert json.loads((tmp_path / "copy" / "unreadable.json").read_text()) == {secure: "EACCES"}
    replay = SnapshotHost(tmp_path / "copy")
    assert anyio.run(replay.read, secure).error == "EACCES"
    assert anyio.run(replay.read, "/etc/absent").error == "ENOENT"


def test_commands_and_nvml_not_recorded_stay_not_recorded(seed_dir: Path, tmp_path: Path) -> None:
    async def calls(probe: Probe) -> object:
        host = probe.host
        return [
            (await host.run(["lsblk"])).error,
            (await host.run(["tuned-adm", "active"])).error,
            (await host.nvml("nvmlDeviceGetBoardId", 0)).error,
            (await host.nvml("nvmlDeviceGetNvLinkState", 0, 0)).error,
        ]

    assert _record_seed(seed_dir, tmp_path / "copy", calls) == ["not_recorded", "not_found", "NOT_RECORDED", "NOT_SUPPORTED"]
    commands = [json.loads(line) for line in (tmp_path / "copy" / "commands.jsonl").read_text().splitlines()]
    assert commands == [{"argv": ["tuned-adm", "active"], "error": "not_found"}]
    nvml = [json.loads(line) for line in (tmp_path / "copy" / "nvml.jsonl").read_text().splitlines()]
    assert nvml == [{"fn": "nvmlDeviceGetNvLinkState", "args": [0, 0], "error": "NOT_SUPPORTED"}]


# -- secrets ----------------------------------------------------------------------------------

SECRETS = ("sk-live-abc123", "hf_tokenvalue", "s3cr3t-pw", "ghp_xyz789")


def _secret_host(root: Path) -> Path:
    (root / "files" / "proc" / "1").mkdir(parents=True)
    (root / "files" / "proc" / "77").mkdir(parents=True)
    (root / "files" / "etc" / "pve" / "lxc").mkdir(parents=True)
    (root / "files" / "etc" / "systemd").mkdir(parents=True)
    (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": "leaky"}))
    (root / "files" / "proc" / "1" / "environ").write_bytes(
        b"PATH=/usr/bin\x00OPENAI_API_KEY=sk-live-abc123\x00container=lxc\x00HF_TOKEN=hf_tokenvalue\x00"
    )
    (root / "files" / "proc" / "77" / "cmdline").write_bytes(
        b"python3\x00-m\x00sglang.launch_server\x00--api-key\x00sk-live-abc123\x00--tp\x008\x00"
    )
    (root / "files" / "etc" / "pve" / "lxc" / "101.conf").write_text(
        "cores: 96\nlxc.environment: HF_TOKEN=hf_tokenvalue\nlxc.environment = DB_PASSWORD=s3cr3t-pw\n"
    )
    (root / "files" / "etc" / "systemd" / "sglang.service").write_text(
        '[Service]\nEnvironment=GITHUB_TOKEN=ghp_xyz789 "OPENAI_API_KEY=sk-live-abc123" CUDA_VISIBLE_DEVICES=0,1\n'
    )
    env_out = "HOME=/root\nOPENAI_API_KEY=sk-live-abc123\nAPI_SECRET=s3cr3t-pw with spaces\n"
    record = {"argv": ["env"], "exit_code": 0, "stdout": env_out, "stderr": "", "duration_s": 0.01}
    (root / "commands.jsonl").write_text(json.dumps(record) + "\n")
    return root


def test_secrets_never_reach_the_snapshot(tmp_path: Path) -> None:
    source = _secret_host(tmp_path / "leaky")
    paths = ["/proc/1/environ", "/proc/77/cmdline", "/etc/pve/lxc/101.conf", "/etc/systemd/sglang.service"]

    async def reads(probe: Probe) -> None:
        for path in paths:
            assert (await probe.read(path)).ok
        assert "sk-live-abc123" in (await probe.host.run(["env"])).stdout

    _record_seed(source, tmp_path / "out", reads)
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, (path, secret)
    replay = SnapshotHost(tmp_path / "out")
    environ = anyio.run(replay.read, "/proc/1/environ").data or b""
    assert environ.split(b"\x00") == [
        b"PATH=/usr/bin",
        b"OPENAI_API_KEY=" + REDACTED.encode(),
        b"container=lxc",
        b"HF_TOKEN=" + REDACTED.encode(),
        b"",
    ]
    assert b"--tp\x008" in (anyio.run(replay.read, "/proc/77/cmdline").data or b"")
    unit = anyio.run(replay.read, "/etc/systemd/sglang.service")
    assert b"CUDA_VISIBLE_DEVICES=0,1" in (unit.data or b"")
    env = anyio.run(replay.run, ["env"]).stdout
    assert env == f"HOME={REDACTED}\nOPENAI_API_KEY={REDACTED}\nAPI_SECRET={REDACTED}\n"


@pytest.mark.parametrize(
    "text",
    [
        "BOOT_IMAGE=/boot/vmlinuz-6.8.12-11-pve root=ZFS=rpool/ROOT/pve-1 ro amd_iommu=on iommu=pt\n",
        "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov\n",
        "net0: name=eth0,bridge=vmbr0,ip=dhcp,type=veth\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind\n",
        "\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n",
    ],
)
def test_redaction_leaves_ordinary_evidence_alone(text: str) -> None:
    assert redact_text(text) == text
    config = bytes(range(256))
    assert redact_file("/sys/bus/pci/devices/0000:03:00.0/config", config) == config


def test_redaction_forms() -> None:
    assert redact_text("export AWS_SECRET_ACCESS_KEY=abc/def") == f"export AWS_SECRET_ACCESS_KEY={REDACTED}"
    assert redact_text('"Env": ["HF_TOKEN=hf_1", "PATH=/bin"]') == f'"Env": ["HF_TOKEN={REDACTED}", "PATH=/bin"]'
    assert redact_text('{"api_key": "sk-1", "model": "glm"}') == f'{{"api_key": "{REDACTED}", "model": "glm"}}'
    assert redact_text("  openai_api_key: sk-1\n") == f"  openai_api_key: {REDACTED}\n"
    assert redact_text("python -m x --api-key sk-1 --tp 8") == f"python -m x --api-key {REDACTED} --tp 8"
    assert redact_text("x --hf-token=hf_1") == f"x --hf-token={REDACTED}"
    environ = b"NCCL_P2P_DISABLE=1\x00A=1\x00MY_PASSWORD=p\x00"
    assert redact_environ(environ) == b"NCCL_P2P_DISABLE=1\x00A=<redacted>\x00MY_PASSWORD=<redacted>\x00"  # the allow-list
    assert redact_cmdline(b"x\x00--token\x00t\x00--flag\x00") == b"x\x00--token\x00" + REDACTED.encode() + b"\x00--flag\x00"


# -- atomic writing -----------------------------------------------------------------------------


def _record_something(target: Path, seed: Path, *, force: bool = False) -> None:
    async def main() -> None:
        recorder = RecordingHost(SnapshotHost(seed))
        await recorder.read("/proc/cmdline")
        await recorder.run(["uname", "-r"])
        await recorder.write_snapshot(target, force=force)

    anyio.run(main)


def test_a_failure_while_writing_leaves_nothing_behind(seed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: Path, records: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_writer, "_write_jsonl", broken)
    with pytest.raises(SnapshotWriteError, match="No space left on device"):
        _record_something(tmp_path / "snap", seed_dir)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_snapshot_is_replaced_only_with_force(seed_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "snap"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(SnapshotTargetError, match="not empty"):
        _record_something(target, seed_dir)
    assert (target / "keep.txt").read_text() == "mine"
    _record_something(target, seed_dir, force=True)
    assert not (target / "keep.txt").exists() and (target / "files" / "proc" / "cmdline").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]
    empty = tmp_path / "empty"
    empty.mkdir()
    _record_something(empty, seed_dir)  # an empty directory is fine without force
    assert (empty / "snapshot.json").exists()


# -- the command ----------------------------------------------------------------------------------


def test_snapshot_command_records_all_collectors(
    seed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(snapshot_command, "make_host", lambda: SnapshotHost(seed_dir))
    out = tmp_path / "snap"
    assert cli.main(["snapshot", "-o", str(out), "--notes", "seed again", "--concurrency", "4"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("snapshot: ") and line.endswith(str(out)) and "NVML calls" in line
    assert json.loads((out / "snapshot.json").read_text())["notes"] == "seed again"
    inventory = anyio.run(collect_gpus, Probe(SnapshotHost(out)))
    assert len(inventory.gpus) == 8 and inventory.driver_version == "580.95.05"
    # Every investigator judges the recorded snapshot exactly as it judges the original.
    assert anyio.run(_judge_all, Probe(SnapshotHost(out))) == anyio.run(_judge_all, Probe(SnapshotHost(seed_dir)))


async def _judge_all(probe: Probe) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for inv in all_investigators():
        try:
            out[inv.area] = [f.model_dump() for f in inv.judge(await inv.collect(probe.scoped()))]
        except Exception as exc:  # an investigator still being written is not this test's subject
            out[inv.area] = f"failed: {exc.__class__.__name__}"
    return out


def test_a_failing_investigator_keeps_the_others_evidence(
    seed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def broken(probe: Probe) -> None:
        await probe.read("/proc/version")
        raise RuntimeError("half way")

    async def fine(probe: Probe) -> None:
        await probe.read("/proc/meminfo")

    investigators = [
        Investigator(area="gpu", title="broken", checks=(), collect=broken, judge=lambda f: []),
        Investigator(area="numa", title="fine", checks=(), collect=fine, judge=lambda f: []),
    ]
    monkeypatch.setattr(snapshot_command, "all_investigators", lambda: investigators)
    monkeypatch.setattr(snapshot_command, "make_host", lambda: SnapshotHost(seed_dir))
    assert cli.main(["snapshot", "-o", str(tmp_path / "snap")]) == 0
    shown = capsys.readouterr().out  # a warning of the session, drawn with its other events
    assert "warning: collection failed for gpu: RuntimeError: half way" in shown
    files = tmp_path / "snap" / "files" / "proc"
    assert (files / "version").exists() and (files / "meminfo").exists()


def test_snapshot_command_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    assert cli.main(["snapshot", "-o", str(full)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli.main(["snapshot", "-o", str(tmp_path / "new"), "--concurrency", "0"]) == 2
    assert not (tmp_path / "new").exists()
