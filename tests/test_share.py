"""Share bundles of real snapshots: the same findings, none of the identifying values.

Parametrized over every snapshot directory in tests/fixtures (the seed now, real hosts as they
are added). The identifying values are collected here independently of the code under test, then
every file of the unpacked bundle (names and contents) is searched for each of them.
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from rigaudit.orchestrator.audit.diff import load_side
from rigaudit.tools.hosts.snapshot import SnapshotError
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.share import ShareError, ShareSummary, share_bundle
from tests.support.diff import audited, scratch, snapshot_dirs

_GPU_UUID = re.compile(r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_MAC = re.compile(r"(?<![0-9a-f:])(?:[0-9a-f]{2}:){5}[0-9a-f]{2}(?![0-9a-f:])", re.I)
_INET = re.compile(r"\binet6? ([0-9a-fA-F.:]+)/\d+")
_HOME = re.compile(r"/home/([A-Za-z0-9_][A-Za-z0-9._-]*)")
_USER = re.compile(r"(?<![A-Za-z0-9_])(?:USER|LOGNAME)=([A-Za-z0-9_][A-Za-z0-9._-]*)")
_GENERIC = {"localhost", "localhost.localdomain", "(none)", ""}
_JUNK = {"not specified", "to be filled by o.e.m.", "default string", "0123456789", "none", "n/a", "unknown"}


def _walk(root: Path) -> Iterator[tuple[str, bytes]]:
    """(path relative to root, bytes) of every file, following the links of light copies."""
    for folder, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path.read_bytes()


def system_words(root: Path) -> set[str]:
    """Parts of the snapshot's /proc, /sys and /dev paths: a host named ``vm`` cannot be searched for as a word."""
    words: set[str] = set()
    for rel, _ in _walk(root / "files"):
        words.update(rel.lower().split("/"))
    for name in ("links.json", "unreadable.json"):
        if (root / name).exists():
            words.update(part.lower() for key in json.loads((root / name).read_text()) for part in key.split("/"))
    return words


def identifying_values(root: Path) -> set[str]:
    """Host names, GPU UUIDs, serial numbers, DMI ids, MAC and IP addresses, user names of a snapshot."""
    values: set[str] = set()
    texts: list[str] = []
    files = {"/" + rel[len("files/") :]: data for rel, data in _walk(root) if rel.startswith("files/")}
    manifest = json.loads((root / "snapshot.json").read_text())
    values.add(str(manifest.get("hostname") or ""))
    for path in ("/etc/hostname", "/proc/sys/kernel/hostname"):
        values.add(files.get(path, b"").decode().strip())
    for path, data in files.items():
        text = data.decode("utf-8", "replace")
        texts.append(text)
        name = path.rsplit("/", 1)[-1]
        if "/dmi/id/" in path and (name.endswith("_serial") or name == "product_uuid"):
            values.add(text.strip())
        if path.startswith("/sys/class/net/") and name == "address":
            values.add(text.strip())
    for line in (root / "commands.jsonl").read_text().splitlines() if (root / "commands.jsonl").exists() else []:
        record = json.loads(line)
        stdout = str(record.get("stdout") or "")
        texts.append(stdout)
        if record["argv"][:2] == ["uname", "-a"] and len(stdout.split()) > 1:
            values.add(stdout.split()[1])
        values.update(a for a in _INET.findall(stdout) if not a.startswith(("127.", "::1")))
    for line in (root / "nvml.jsonl").read_text().splitlines() if (root / "nvml.jsonl").exists() else []:
        record = json.loads(line)
        if record["fn"] in ("nvmlDeviceGetUUID", "nvmlDeviceGetSerial") and isinstance(record.get("result"), str):
            values.add(record["result"])
    for text in texts:
        values.update(_GPU_UUID.findall(text))
        values.update(m for m in _MAC.findall(text) if m.lower() not in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"))
        values.update(f"/home/{name}" for name in _HOME.findall(text))
        values.update(f"={name}" for name in _USER.findall(text) if name != "root")
    return {v for v in values if v.lower() not in _GENERIC and v.lower() not in _JUNK}


def host_places(root: Path) -> list[str]:
    """The places a snapshot writes its host name down."""
    places = [json.loads((root / "snapshot.json").read_text())["hostname"]]
    for path in ("etc/hostname", "proc/sys/kernel/hostname"):
        if (root / "files" / path).exists():
            places.append((root / "files" / path).read_text().strip())
    for line in (root / "commands.jsonl").read_text().splitlines() if (root / "commands.jsonl").exists() else []:
        record = json.loads(line)
        if record["argv"][:2] == ["uname", "-a"] and len(str(record.get("stdout") or "").split()) > 1:
            places.append(record["stdout"].split()[1])
    return places


def members(bundle: Path) -> dict[str, bytes]:
    """The files of a bundle, by their path inside its one folder (read without unpacking)."""
    with tarfile.open(bundle, "r:gz") as archive:
        return {m.name.split("/", 1)[1]: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]


def leaks(root: Path | dict[str, bytes], values: set[str]) -> list[str]:
    """Where any of ``values`` is still found: in a file's name or its contents (case-insensitive)."""
    pattern = re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)).encode(), re.I)
    found = []
    for rel, data in root.items() if isinstance(root, dict) else _walk(root):
        for where in (rel.encode(), data):
            match = pattern.search(where)
            if match:
                found.append(f"{rel}: {match.group().decode(errors='replace')}")
    return found


def unpack(bundle: Path, into: Path) -> Path:
    with tarfile.open(bundle, "r:gz") as archive:
        names = archive.getnames()
        archive.extractall(into, filter="data")
    tops = {n.split("/", 1)[0] for n in names}
    assert len(tops) == 1, tops  # one folder: the scrubbed snapshot
    return into / tops.pop()


@dataclass
class Shared:
    original: Path
    audit: AuditResult
    bundle: Path
    summary: ShareSummary
    root: Path
    findings: tuple[Finding, ...]
    """The audit of the bundle itself (read from the .tar.gz as `rigaudit diff` reads one)."""


@pytest.fixture(scope="module", params=snapshot_dirs(), ids=lambda p: p.name)
def shared(request: pytest.FixtureRequest) -> Shared:
    original: Path = request.param
    result, _ = audited(original)
    folder = scratch("share")
    bundle = folder / f"{json.loads((original / 'snapshot.json').read_text())['hostname']}.tar.gz"
    summary = share_bundle(original, bundle, audit=result)
    with tarfile.open(bundle, "r:gz") as archive:
        assert {n.split("/", 1)[0] for n in archive.getnames()} == {summary.folder}  # one folder: the scrubbed snapshot
    side = anyio.run(lambda: load_side(bundle, values=False, scratch=folder))  # unpacked and audited as `rigaudit diff` does
    assert side.kind == "bundle" and side.snapshot == folder / "unpacked" / summary.folder
    return Shared(original, result, bundle, summary, side.snapshot, side.findings)


def _verdicts(findings: tuple[Finding, ...]) -> set[tuple[str, str, str | None]]:
    return {(f.check, f.status, f.severity) for f in findings}


def test_the_bundle_audits_to_the_same_findings(shared: Shared) -> None:
    assert len(shared.findings) == len(shared.audit.findings) > 0
    assert _verdicts(shared.findings) == _verdicts(shared.audit.findings)


def test_the_bundle_holds_none_of_the_identifying_values(shared: Shared) -> None:
    values = identifying_values(shared.original)
    if shared.original.name.startswith("seed-"):  # the seed's: its host name, 8 GPU UUIDs, 8 serial numbers
        assert {"pve-gpu01", "GPU-5a1c0000-7e2d-4c1b-9f0a-3b8e0d6c0000", "1782523000000"} <= values and len(values) == 17
    # A host named like a common word (``vm``: /proc/sys/vm) is checked where host names are written down.
    words = system_words(shared.original)
    names = {v for v in values if v in host_places(shared.original) and (len(v) < 4 or v.lower() in words)}
    values -= names
    assert leaks(shared.original, values)  # the search finds them in the original
    assert leaks(shared.root, values) == []
    assert not {p.lower() for p in host_places(shared.root)} & {n.lower() for n in names}
    assert shared.summary.counts["gpu_uuid"][0] == sum(1 for v in values if v.startswith("GPU-"))


def test_pcie_device_serial_numbers_are_zeroed_and_config_space_kept(shared: Shared) -> None:
    from rigaudit.tools.pci import PciConfigError, parse_config

    zeroed = 0
    for config in (shared.original / "files/sys").rglob("config"):
        before = config.read_bytes()
        after = (shared.root / config.relative_to(shared.original)).read_bytes()
        try:
            cap = parse_config(before).extended_capability(0x0003)
        except PciConfigError:
            cap = None
        if cap is None or not any(before[cap.offset + 4 : cap.offset + 12]):
            assert after == before  # configuration space is otherwise byte for byte the original
            continue
        zeroed += 1
        dsn = slice(cap.offset + 4, cap.offset + 12)
        assert after[dsn] == bytes(8) and after[: dsn.start] == before[: dsn.start] and after[dsn.stop :] == before[dsn.stop :]
    assert zeroed == shared.summary.stats.dsn_zeroed


def _uuid_by_bdf(root: Path) -> dict[str, str]:
    out = {}
    for info in sorted((root / "files/proc/driver/nvidia/gpus").glob("*/information")):
        match = re.search(r"GPU UUID:\s*(\S+)", info.read_text())
        if match:
            out[info.parent.name] = match.group(1)
    return out


def _nvml(root: Path, fn: str) -> dict[int, object]:
    records = [json.loads(line) for line in (root / "nvml.jsonl").read_text().splitlines()]
    return {r["args"][0]: r.get("result") for r in records if r["fn"] == fn and r.get("args")}


def test_each_gpu_keeps_one_placeholder_everywhere(shared: Shared) -> None:
    before, after = _uuid_by_bdf(shared.original), _uuid_by_bdf(shared.root)
    nvml_before, nvml_after = _nvml(shared.original, "nvmlDeviceGetUUID"), _nvml(shared.root, "nvmlDeviceGetUUID")
    assert before.keys() == after.keys() and len(set(after.values())) == len(after)
    for index, uuid in nvml_before.items():
        bdf = next((b for b, u in before.items() if u == uuid), None)
        if bdf is not None:
            assert nvml_after[index] == after[bdf]
    if nvml_after:
        assert nvml_after[0] == "GPU-00000000-0000-0000-0000-000000000001"  # numbered in NVML index order


def test_share_md_opens_with_the_summary_to_paste(shared: Shared) -> None:
    text = (shared.root / "SHARE.md").read_text()
    assert text.startswith("# rigaudit share bundle\n\n```text\n" + shared.summary.block + "\n```\n")
    problems = [f for f in shared.audit.findings if f.status == "problem"]
    assert f"problems: {len(problems)}" in shared.summary.block
    assert all(f.check in shared.summary.block for f in problems)
    assert "| GPU UUIDs |" in text or not shared.summary.counts.get("gpu_uuid")
    manifest = json.loads((shared.root / "snapshot.json").read_text())
    assert manifest["hostname"] == "host-1" and manifest["shared"]["replaced"]["hostname"]["values"] >= 1


def test_the_bundle_is_written_atomically_and_not_over_another(shared: Shared) -> None:
    assert sorted(p.name for p in shared.bundle.parent.iterdir() if p.is_file()) == [shared.bundle.name]
    with pytest.raises(ShareError, match="exists"):
        share_bundle(shared.original, shared.bundle)
    with pytest.raises(SnapshotError, match="not a snapshot"):
        share_bundle(shared.bundle.parent / "unpacked", shared.bundle.parent / "x.tar.gz")
    assert not (shared.bundle.parent / "x.tar.gz").exists()


def _inject(root: Path) -> set[str]:
    """Write one identifying value of every kind into a copy of the seed; return them all."""
    from tests.support.diff import GPU0_CONFIG, SEED
    from tests.support.mutate import add_process, set_command, set_file
    from tests.test_share_scrub import _vpd, _with_dsn

    set_file(root, "/etc/hosts", "127.0.0.1 localhost\n127.0.1.1 pve-gpu01.corp.example.com pve-gpu01\n")
    set_file(root, "/etc/pve/nodes/pve-gpu01/lxc/101.conf", "hostname: sglang\n")
    set_file(root, "/etc/machine-id", "8f3a2b1c4d5e6f708192a3b4c5d6e7f8\n")
    set_file(root, "/etc/default/sglang", "EXTRA=--header 'Authorization: Bearer abcdefgh12345678'\n")
    set_file(root, "/home/alice/.config/sglang/notes.txt", "models in /home/alice/models\n")
    set_file(root, "/sys/class/net/eno1np0/address", "3c:ec:ef:12:34:56\n")
    set_file(root, "/sys/class/net/ib0/address", "00:00:10:49:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:16:5a:7e\n")
    set_file(root, "/sys/class/infiniband/mlx5_0/node_guid", "0c42:a103:0016:5a7e\n")
    dmi = {"product_serial": "S4KX9A12", "board_serial": "BSN778899", "product_uuid": "4c4c4544-0042-3510-8052-b4c04f4e3432"}
    for name, value in dmi.items():
        set_file(root, f"/sys/class/dmi/id/{name}", value + "\n")
    config = (SEED / "files" / GPU0_CONFIG.lstrip("/")).read_bytes()
    set_file(root, GPU0_CONFIG, _with_dsn(config, bytes.fromhex("2c1a8effff2db048")))
    set_file(root, GPU0_CONFIG.replace("/config", "/vpd"), _vpd())
    set_command(
        root,
        ["ip", "addr"],
        "2: eno1np0: <UP> mtu 1500\n    link/ether 3c:ec:ef:12:34:56 brd ff:ff:ff:ff:ff:ff\n"
        "    inet 10.20.30.40/24 brd 10.20.30.255 scope global eno1np0\n"
        "    inet6 2a01:4f8:1:2::17/64 scope global\n    inet6 fe80::3eec:efff:fe12:3456/64 scope link\n",
    )
    smi = "Serial Number : 1782523000003\nGPU UUID : GPU-5a1c0003-7e2d-4c1b-9f0a-3b8e0d6c0003\n"
    set_command(root, ["nvidia-smi", "-q"], smi)
    lspci = "\t\t[SN] Serial number: MT2142X12345\n\tCapabilities: [148 v1] Device Serial Number 48-b0-2d-ff-ff-8e-1a-2c\n"
    set_command(root, ["lspci", "-vvv"], lspci)
    dmesg = "[ 1.0] systemd[1]: Set hostname to <pve-gpu01>.\n[ 2.0] backup to nas-pve-gpu01_old\n"
    set_command(root, ["dmesg"], dmesg, any_args=True)
    add_process(
        root,
        4242,
        ["python3", "-m", "sglang.launch_server", "--model-path", "/home/alice/models/GLM", "--api-key", "sk-abcdefgh12345678"],
        environ={"USER": "alice", "HOME": "/home/alice", "HF_TOKEN": "hf_abcdefghijklmnopqrstuv", "HOSTNAME": "pve-gpu01"},
        files={"mounts": "nas:/export /mnt nfs4 rw,addr=10.20.30.50 0 0\n"},
    )
    return {
        "pve-gpu01", "corp.example.com", "8f3a2b1c4d5e6f708192a3b4c5d6e7f8", "abcdefgh12345678", "/home/alice", "=alice",
        "3c:ec:ef:12:34:56", "0c:42:a1:03:00:16:5a:7e", "0c42:a103:0016:5a7e", "S4KX9A12", "BSN778899",
        "4c4c4544-0042-3510-8052-b4c04f4e3432", "10.20.30.40", "10.20.30.255", "10.20.30.50", "2a01:4f8:1:2::17",
        "fe80::3eec:efff:fe12:3456", "1782523000003", "MT2142X12345", "48-b0-2d-ff-ff-8e-1a-2c", "sk-abcdefgh12345678",
        "hf_abcdefghijklmnopqrstuv",
    }  # fmt: skip


def test_every_kind_of_identifying_value_is_replaced_the_same_way_everywhere() -> None:
    from tests.support.diff import GPU0_CONFIG, SEED
    from tests.support.mutate import light_copy

    folder = scratch("inject")
    root = light_copy(SEED, folder / "snap")
    injected = _inject(root)
    summary = share_bundle(root, folder / "bundle.tar.gz")
    out = members(folder / "bundle.tar.gz")
    assert leaks(out, injected) == []
    kinds = {"hostname", "domain", "container", "serial", "gpu_uuid", "uuid", "mac", "ip", "user", "machine_id"}
    assert set(summary.counts) == kinds
    assert summary.stats.redacted >= 3 and summary.stats.dsn_zeroed == 1 and summary.stats.vpd_masked == 1
    assert summary.stats.unbounded == 1  # nas-pve-gpu01_old: glued to a word, caught by the final check

    def read(path: str) -> str:
        return out["files" + path].decode()

    commands = {tuple(r["argv"]): r for r in map(json.loads, out["commands.jsonl"].decode().splitlines())}
    ip = commands[("ip", "addr")]["stdout"]
    assert f"link/ether {read('/sys/class/net/eno1np0/address').strip()} brd ff:ff:ff:ff:ff:ff" in ip  # one MAC, one placeholder
    assert re.search(r"inet 192\.0\.2\.\d+/24 brd 192\.0\.2\.\d+ ", ip) and "inet6 2001:db8::" in ip and "inet6 fe80::db8:" in ip
    assert read("/etc/hostname").strip() == "host-1" and "Set hostname to <host-1>" in commands[("dmesg",)]["stdout"]
    assert read("/etc/hosts").splitlines()[1] == "127.0.1.1 host-1.domain-1.invalid host-1"
    assert read("/etc/pve/nodes/host-1/lxc/101.conf") == "hostname: container-1\n"  # the file is renamed with its host
    assert "sglang.launch_server" in out["files/proc/4242/cmdline"].decode()  # the container's name is a common word
    assert read("/home/user-1/.config/sglang/notes.txt") == "models in /home/user-1/models\n"
    cmdline = out["files/proc/4242/cmdline"].split(b"\x00")
    assert cmdline[:5] == [b"python3", b"-m", b"sglang.launch_server", b"--model-path", b"/home/user-1/models/GLM"]
    assert cmdline[6] == b"<redacted>"
    environ = out["files/proc/4242/environ"].split(b"\x00")
    assert {b"USER=<redacted>", b"HOME=<redacted>", b"HF_TOKEN=<redacted>", b"HOSTNAME=<redacted>"} <= set(environ)
    assert "[SN] Serial number: serial-" in commands[("lspci", "-vvv")]["stdout"]
    assert "GPU UUID : GPU-00000000-0000-0000-0000-000000000004" in commands[("nvidia-smi", "-q")]["stdout"]  # GPU3 is the 4th
    original = (root / "files" / GPU0_CONFIG.lstrip("/")).read_bytes()
    shared = out["files" + GPU0_CONFIG]
    assert shared[0xF04:0xF0C] == bytes(8) and shared[:0xF04] == original[:0xF04] and shared[0xF0C:] == original[0xF0C:]
    assert b"MT2142X12345" not in out["files" + GPU0_CONFIG.replace("/config", "/vpd")]
    assert any("SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c" in k for k in json.loads(out["unreadable.json"]))
    assert "| user names | 1 | " in out["SHARE.md"].decode()


def test_a_host_named_like_a_word_keeps_the_word(tmp_path: Path) -> None:
    """A VM called ``vm`` (/proc/sys/vm) or a container called ``sglang``: renamed where a host name is written only."""
    cases = (("vm", "/proc/sys/vm/swappiness", "vm.swappiness = 60"), ("sglang", "/proc/9/comm", "sglang"))
    for name, word_path, word_text in cases:
        root = tmp_path / name
        (root / "files/etc").mkdir(parents=True)
        (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": name}))
        (root / "files/etc/hostname").write_text(name + "\n")
        (root / "files" / word_path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / "files" / word_path.lstrip("/")).write_text(word_text + "\n")
        (root / "files/etc/sysctl.conf").write_text(f"# {word_text}\n")
        share_bundle(root, tmp_path / f"{name}.tar.gz")
        out = unpack(tmp_path / f"{name}.tar.gz", tmp_path / f"{name}-out")
        assert (out / "files/etc/hostname").read_text() == "host-1\n"
        assert json.loads((out / "snapshot.json").read_text())["hostname"] == "host-1"
        assert (out / "files" / word_path.lstrip("/")).read_text() == word_text + "\n"
        assert (out / "files/etc/sysctl.conf").read_text() == f"# {word_text}\n"


def test_the_manifest_counts_secrets_redacted_before_and_by_the_bundle(tmp_path: Path) -> None:
    """A snapshot recorded by rigaudit already holds its secrets redacted: the bundle counts them too."""
    root = tmp_path / "snap"
    (root / "files/proc/7").mkdir(parents=True)
    (root / "snapshot.json").write_text(json.dumps({"format": "rigaudit.snapshot/1", "hostname": "gpu-node-7"}))
    environ = b"HF_TOKEN=<redacted>\x00OPENAI_API_KEY=<redacted>\x00HOME=<redacted>\x00NCCL_DEBUG=INFO\x00"
    (root / "files/proc/7/environ").write_bytes(environ)
    (root / "files/proc/7/cmdline").write_bytes(b"vllm\x00serve\x00--api-key\x00<redacted>\x00--auth\x00Qm9vYXJ0aGF0\x00")
    summary = share_bundle(root, tmp_path / "b.tar.gz")
    out = members(tmp_path / "b.tar.gz")
    shared = json.loads(out["snapshot.json"])["shared"]
    assert shared["redacted"] == {"credential": 1, "when_recorded": 4, "total": 5}
    assert summary.stats.redacted == 5 == sum(d.count(b"<redacted>") for n, d in out.items() if n != "SHARE.md")
    assert "redacted: 5 values in all" in out["SHARE.md"].decode() and "5 secrets redacted" in summary.line()
