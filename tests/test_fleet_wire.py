"""Fleet plumbing without daemons: host lists, the node script, ssh argv, tar streams, Slurm
framing, the node server on a bare python3, and ``rigaudit snapshot --stdout``."""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from rigaudit.orchestrator.commands.snapshot import COMMAND as SNAPSHOT
from rigaudit.orchestrator.fleet.targets import parse_hosts
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.remote.framing import FRAMER, TAG, FrameReader
from rigaudit.tools.remote.payload import MODULES, build_payload, framed_payload
from rigaudit.tools.remote.slurm import SlurmJob, task_argv
from rigaudit.tools.remote.tarstream import ArchiveError, extract_snapshot_tar, snapshot_tar_bytes
from rigaudit.tools.remote.transport import SshTransport, TransportError, node_script

BARE_PYTHON = Path("/usr/bin/python3")
VM = Path(__file__).parent / "fixtures" / "h200x2-vm"


# -- host lists and command lines ---------------------------------------------------------------


def test_hosts_from_a_file_and_from_a_list(tmp_path: Path) -> None:
    listing = tmp_path / "gpu.hosts"
    listing.write_text("# rack 4\ngpu-01\n\nroot@gpu-02  # the odd one\nssh://admin@gpu-03:2222\ngpu-01\n")
    assert parse_hosts(str(listing)) == ["gpu-01", "root@gpu-02", "ssh://admin@gpu-03:2222"]
    assert parse_hosts("a, b,a") == ["a", "b"]
    assert parse_hosts("only-one") == ["only-one"]


@pytest.mark.parametrize("bad", ["-oProxyCommand=touch /tmp/x", "a;reboot", "a,$(id)", "host name", ",,"])
def test_bad_hosts_are_refused_with_one_line(bad: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_hosts(bad)
    assert "\n" not in str(caught.value)


def test_a_missing_hosts_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        parse_hosts(str(tmp_path / "nodes.txt"))


def test_node_script_survives_any_login_shell_and_announces_its_mode() -> None:
    script = node_script("auto", rigaudit="/opt/ra/bin/rigaudit")
    assert "'" not in script and "\n" not in script
    assert script.index("RIGAUDIT-NODE installed") < script.index("RIGAUDIT-NODE server") < script.index("RIGAUDIT-NODE missing")
    assert "exec /opt/ra/bin/rigaudit snapshot --stdout" in script and "-I -S -c" in script
    assert "RIGAUDIT-NODE server" not in node_script("installed") and "RIGAUDIT-NODE installed" not in node_script("server")
    with pytest.raises(TransportError):
        node_script("auto", rigaudit="rigaudit; rm -rf ~")


def test_the_script_runs_under_sh_and_picks_the_node_server_without_rigaudit(tmp_path: Path) -> None:
    result = subprocess.run(
        ["sh", "-c", node_script("auto", rigaudit="rigaudit-not-here")],
        env={"PATH": "/usr/bin:/bin"},
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert result.stdout.startswith(b"RIGAUDIT-NODE server\n")  # then python3 found no payload on stdin
    assert result.returncode != 0


def test_ssh_argv_uses_the_users_openssh_non_interactively() -> None:
    argv = SshTransport().argv("root@gpu-7", "echo hi")
    assert argv[0] == "ssh" and "-F" not in argv
    assert "BatchMode=yes" in argv and any(a.startswith("ConnectTimeout=") for a in argv)
    assert argv[-3:] == ["--", "root@gpu-7", "sh -c 'echo hi'"]
    wrapped = SshTransport(command=("ip", "netns", "exec", "hub", "ssh"), config=Path("/t/cfg"), options=("Port=2222",)).argv(
        "n", "x"
    )
    assert wrapped[:5] == ["ip", "netns", "exec", "hub", "ssh"]
    assert wrapped[wrapped.index("-F") + 1] == "/t/cfg" and "Port=2222" in wrapped
    with pytest.raises(TransportError):
        SshTransport().argv("-oProxyCommand=x", "echo")


def test_srun_argv_is_one_task_per_node() -> None:
    argv = SlurmJob(partition="gpu", nodelist="gpu[01-04]", time_limit_min=3).argv(task_argv("/shared/bin/rigaudit"))
    assert argv[:2] == ["srun", "--ntasks-per-node=1"]
    assert "--partition=gpu" in argv and "--nodelist=gpu[01-04]" in argv and "--time=3" in argv
    assert argv[-3:] == ["/shared/bin/rigaudit", "snapshot", "--stdout"]


# -- tar streams --------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_snapshot_stream_round_trip(tmp_path: Path) -> None:
    data = snapshot_tar_bytes(VM)
    count = extract_snapshot_tar(data, tmp_path / "copy")
    assert _tree(tmp_path / "copy") == _tree(VM) and count == len(_tree(VM))
    assert SnapshotHost(tmp_path / "copy").name == SnapshotHost(VM).name


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


MANIFEST = (_member("snapshot.json"), b'{"format": "rigaudit.snapshot/1", "hostname": "x"}')


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ((_member("../escape"), b"x"), "'..'"),
        ((_member("/etc/cron.d/x"), b"x"), "not a relative name"),
        ((_member("files/etc", tarfile.SYMTYPE, "/etc"), b""), "only files and folders"),
        ((_member("files/dev", tarfile.CHRTYPE), b""), "only files and folders"),
        ((_member("files/hard", tarfile.LNKTYPE, "snapshot.json"), b""), "only files and folders"),
    ],
)
def test_hostile_streams_are_refused(tmp_path: Path, member: tuple[tarfile.TarInfo, bytes], why: str) -> None:
    with pytest.raises(ArchiveError, match=why):
        extract_snapshot_tar(_tar([MANIFEST, member]), tmp_path / "x")
    assert not (tmp_path / "escape").exists()


def test_oversized_duplicated_and_foreign_streams_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="MiB"):
        extract_snapshot_tar(_tar([MANIFEST, (_member("files/big"), b"x" * 4096)]), tmp_path / "a", max_bytes=1024)
    with pytest.raises(ArchiveError, match="twice"):
        extract_snapshot_tar(_tar([MANIFEST, MANIFEST]), tmp_path / "b")
    with pytest.raises(ArchiveError, match=r"no snapshot\.json"):
        extract_snapshot_tar(_tar([(_member("files/x"), b"x")]), tmp_path / "c")
    with pytest.raises(ArchiveError, match="not a readable snapshot stream"):
        extract_snapshot_tar(b"Welcome to gpu-7!\n", tmp_path / "d")


# -- Slurm framing ------------------------------------------------------------------------------


def _frames(node: str, data: bytes, code: int = 0, chunk: int = 5) -> list[str]:
    parts = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    lines = [f"{TAG} {node} {i} {base64.b64encode(p).decode()}\n" for i, p in enumerate(parts)]
    stderr = base64.b64encode(b"rigaudit: warning: x").decode()
    return [*lines, f"{TAG} {node} end {code} {hashlib.sha256(data).hexdigest()} {len(parts)} {stderr}\n"]


def test_interleaved_node_streams_are_told_apart() -> None:
    a, b = _frames("gpu01", b"first node's stream"), _frames("gpu02", b"second node, longer stream")
    reader = FrameReader()
    done = []
    for line in ["srun: job 7 queued\n", *[x for pair in zip(a, b[: len(a)], strict=True) for x in pair], *b[len(a) :]]:
        stream = reader.feed(line)
        if stream is not None:
            done.append(stream)
    assert [(s.node, s.data, s.error) for s in done] == [
        ("gpu01", b"first node's stream", None),
        ("gpu02", b"second node, longer stream", None),
    ]
    assert done[0].stderr == "rigaudit: warning: x" and reader.noise == ["srun: job 7 queued"]


def test_a_garbled_stream_is_an_error_not_a_snapshot() -> None:
    frames = _frames("gpu01", b"0123456789abcdef")
    swapped = [frames[1], frames[0], *frames[2:]]
    reader = FrameReader()
    results = [reader.feed(line) for line in swapped]
    assert results[-1] is not None and results[-1].error is not None and "expected" in results[-1].error
    tampered = _frames("gpu02", b"0123456789")
    tampered[0] = f"{TAG} gpu02 0 {base64.b64encode(b'XXXXX').decode()}\n"
    reader = FrameReader()
    last = [reader.feed(line) for line in tampered][-1]
    assert last is not None and last.error is not None and "digest" in last.error


def test_the_framer_runs_on_a_bare_python(tmp_path: Path) -> None:
    python = str(BARE_PYTHON if BARE_PYTHON.exists() else sys.executable)
    payload = tmp_path / "payload.bin"
    payload.write_bytes(bytes(range(256)) * 500)
    command = ["sh", "-c", f'cat {payload}; echo "rigaudit: warning: slow disk" >&2; exit 0']
    result = subprocess.run([python, "-I", "-S", "-c", FRAMER, *command], capture_output=True, text=True, timeout=60)
    reader = FrameReader()
    streams = [s for line in result.stdout.splitlines(keepends=True) if (s := reader.feed(line)) is not None]
    assert len(streams) == 1 and streams[0].error is None and streams[0].exit_code == 0
    assert streams[0].data == payload.read_bytes() and "slow disk" in streams[0].stderr
    missing = subprocess.run([python, "-I", "-S", "-c", FRAMER, "no-such-rigaudit"], capture_output=True, text=True, timeout=60)
    stream = FrameReader().feed(missing.stdout.splitlines()[-1])
    assert stream is not None and stream.exit_code == 127 and "no-such-rigaudit" in stream.stderr


# -- the node server on a bare python3 -----------------------------------------------------------


def _requests(*items: dict[str, object]) -> bytes:
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)


@pytest.mark.skipif(not BARE_PYTHON.exists(), reason="no /usr/bin/python3 to play a bare node")
def test_the_payload_serves_from_memory_on_a_python_without_rigaudit_or_pydantic(tmp_path: Path) -> None:
    from rigaudit.tools.remote.payload import bootstrap_command

    names = set(zipfile.ZipFile(io.BytesIO(build_payload())).namelist())
    assert {
        "__main__.py",
        "pynvml.py",
        "rigaudit/__init__.py",
        "rigaudit/tools/__init__.py",
        "rigaudit/tools/hosts/local.py",
        "rigaudit/tools/remote/node_server.py",
    } <= names
    assert not any(n.startswith(("pydantic", "anyio", "rigaudit/orchestrator", "rigaudit/agents")) for n in names)
    marker = tmp_path / "cmdline"
    marker.write_text("quiet splash\n")
    stdin = framed_payload() + _requests(
        {"id": 1, "op": "read", "path": str(marker)},
        {"id": 2, "op": "list_dir", "path": str(tmp_path)},
        {"id": 3, "op": "run", "argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]},
        {"id": 4, "op": "nvml", "fn": "nvmlDeviceSetPowerManagementLimit", "args": [0, 100]},
        {"id": 5, "op": "read", "path": str(tmp_path / "absent")},
        {"id": 6, "op": "run", "argv": ["sleep", "30"], "timeout_s": 0.3},
        {"id": 7, "op": "format_disk"},
        {"op": "bye"},
    )
    result = subprocess.run(
        ["sh", "-c", bootstrap_command(str(BARE_PYTHON))], input=stdin, capture_output=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr.decode()
    hello, *answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert hello["hello"] == "rigaudit-node-server/1" and hello["no_site"] and hello["isolated"] and not hello["pydantic_loaded"]
    by_id = {a["id"]: a for a in answers}
    assert base64.b64decode(by_id[1]["data"]) == b"quiet splash\n"
    assert by_id[2]["entries"] == ["cmdline"]
    assert (by_id[3]["exit_code"], by_id[3]["stdout"], by_id[3]["stderr"]) == (3, "out\n", "err\n")
    assert by_id[4]["error"] in ("LIBRARY_NOT_FOUND", "NO_PERMISSION") and "value" not in by_id[4]  # a setter never runs
    assert by_id[5]["error"] == "ENOENT"
    assert by_id[6]["error"] == "timeout" and by_id[6]["exit_code"] is None
    assert "unknown op" in by_id[7]["fail"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmdline"]  # nothing written on the node


# -- rigaudit snapshot --stdout -----------------------------------------------------------------


def _snapshot_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    SNAPSHOT.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_snapshot_stdout_streams_a_prepared_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setenv("RIGAUDIT_SNAPSHOT_SOURCE", str(VM))
    assert SNAPSHOT.run(_snapshot_args("--stdout")) == 0
    stream = capsysbinary.readouterr().out
    assert stream[:2] == b"\x1f\x8b"  # gzip
    extract_snapshot_tar(stream, tmp_path / "got")
    assert _tree(tmp_path / "got") == _tree(VM)


def test_snapshot_stdout_records_this_machine(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rigaudit.orchestrator.hosts.snapshots as snapshot_command

    seed = VM
    monkeypatch.delenv("RIGAUDIT_SNAPSHOT_SOURCE", raising=False)
    monkeypatch.setattr(snapshot_command, "make_host", lambda: SnapshotHost(seed))  # "this machine", replayed
    assert SNAPSHOT.run(_snapshot_args("--stdout", "--notes", "rack 4")) == 0
    extract_snapshot_tar(capsysbinary.readouterr().out, tmp_path / "got")
    manifest = json.loads((tmp_path / "got" / "snapshot.json").read_text())
    assert manifest["notes"] == "rack 4" and manifest["format"] == "rigaudit.snapshot/1"
    files = sum(1 for p in (tmp_path / "got" / "files").rglob("*") if p.is_file())
    assert 0 < files <= sum(1 for p in (seed / "files").rglob("*") if p.is_file())  # what the collectors read
    assert SnapshotHost(tmp_path / "got").name == SnapshotHost(seed).name


def test_snapshot_needs_exactly_one_target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        _snapshot_args("--stdout", "-o", str(tmp_path))
    with pytest.raises(SystemExit):
        _snapshot_args()
    monkeypatch.setenv("RIGAUDIT_SNAPSHOT_SOURCE", str(tmp_path / "none"))
    with pytest.raises(UsageError, match="RIGAUDIT_SNAPSHOT_SOURCE"):
        SNAPSHOT.run(_snapshot_args("--stdout"))


def test_payload_lists_only_stdlib_importers() -> None:
    """Every module sent to nodes imports only the standard library, the payload, or the stand-in anyio (what a
    type checker alone reads, under ``TYPE_CHECKING``, is never imported)."""
    import ast
    import importlib.util

    allowed = {m.split(".")[0] for m in MODULES} | {"anyio", "pynvml"}
    for module in MODULES:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text())
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in (n for statement in node.body for n in ast.walk(statement))
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or top in sys.stdlib_module_names or top == "__future__", f"{module} imports {name}"
                if top == "rigaudit":
                    assert name in MODULES or name.rsplit(".", 1)[0] in MODULES, f"{module} imports {name}, not in the payload"


def _interpreter(version: str) -> str | None:
    """A python of that version that really runs (a pyenv shim of an unselected version does not)."""
    candidates = [str(p) for p in sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python3"))]
    candidates.append(shutil.which(f"python{version}") or "")
    for python in filter(None, candidates):
        if subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30).returncode == 0:
            return python
    return None


@pytest.mark.parametrize("version", ["3.9", "3.13"])
def test_the_node_server_runs_on_the_oldest_and_newest_supported_pythons(version: str) -> None:
    from rigaudit.tools.remote.payload import bootstrap_command

    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine to play a node")
    stdin = framed_payload() + _requests({"id": 1, "op": "run", "argv": ["sh", "-c", "echo ok"]}, {"op": "bye"})
    result = subprocess.run(["sh", "-c", bootstrap_command(python)], input=stdin, capture_output=True, timeout=60)
    hello, answer = [json.loads(line) for line in result.stdout.splitlines()]
    assert hello["python"].startswith(version + ".") and answer["stdout"] == "ok\n", result.stderr.decode()


def test_a_too_old_python_says_so() -> None:
    from rigaudit.tools.remote.payload import bootstrap_command

    python = _interpreter("3.8")
    if python is None:
        pytest.skip("no python3.8 on this machine to play an old node")
    result = subprocess.run(["sh", "-c", bootstrap_command(python)], input=framed_payload(), capture_output=True, timeout=60)
    assert result.returncode == 3 and b"python3 >= 3.9 needed on the node" in result.stderr
