"""Secrets never leave: every writer run over the planted corpus, and every output byte searched.

A copy of the seed holds the corpus (tests/support/secrets_corpus.py). Over it run: ``rigaudit snapshot``
(recording it as a live host), ``snapshot --share`` (of the copy, and recording first), ``audit --json
--report --transcript``, and an LLM audit against the scripted loopback model whose requests are all
kept. Each planted secret is then searched for in every byte written (raw, JSON-escaped, and base64
at its three alignments, as transcripts store file data), in the stdout and stderr of the commands,
and in every request body the model received; each planted identity is searched for in the bundles.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, call, final
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.hosts import snapshots as snapshot_command
from rigaudit.tools.core import record
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.redact import REDACTED
from tests.support.diff import SEED, scratch
from tests.support.mutate import light_copy
from tests.support.secrets_corpus import Planted, plant
from tests.test_share import members


@dataclass
class Outputs:
    root: Path
    planted: Planted
    work: Path
    files: dict[str, bytes] = field(default_factory=dict)
    """Every output, by a name that says where it came from."""
    codes: dict[str, int] = field(default_factory=dict)


def _run(out: Outputs, name: str, argv: list[str]) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        out.codes[name] = main(argv)
    out.files[f"{name}: stdout"] = stdout.getvalue().encode()
    out.files[f"{name}: stderr"] = stderr.getvalue().encode()


def _collect(out: Outputs, folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith((".tar.gz", ".tgz")):
                out.files.update({f"{path.name}:{k}": v for k, v in members(path).items()})
            else:
                out.files[str(path.relative_to(folder))] = data


def _script(planted: Planted) -> dict[str, list]:  # type: ignore[type-arg]
    echoed = next(s.value for s in planted.secrets if s.name == "OPENAI_API_KEY")
    finding = {
        "check": "kernel.operator_notes",
        "status": "problem",
        "severity": "low",
        "title": "Credentials written in a notes file",
        "observed": f"/etc/modprobe.d/gpu-notes.conf holds a key; the server runs with OPENAI_API_KEY={echoed}",
        "evidence": ["file:/etc/modprobe.d/gpu-notes.conf"],
    }
    return {
        "kernel": [
            record.replace(
                call("read_file", path="/etc/modprobe.d/gpu-notes.conf"), content=f"Looking for OPENAI_API_KEY={echoed} first."
            ),
            call("read_file", path=f"/proc/{planted.pid}/environ"),
            call("shell", command=f"strings /proc/{planted.pid}/cmdline"),
            call("shell", command="ps -eww -o user,pid,pcpu,args"),
            call("shell", command="dmesg"),
            final({"findings": [finding]}),
        ]
    }


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outputs]:
    work = tmp_path_factory.mktemp("outputs")
    root = light_copy(SEED, scratch("planted") / "snap")
    out = Outputs(root, plant(root), work)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snapshot_command, "make_host", lambda: SnapshotHost(root))  # "this machine" is the planted copy
        mp.setattr(tempfile, "tempdir", str(work))
        mp.setenv("XDG_STATE_HOME", str(work / "state"))
        _run(out, "snapshot", ["snapshot", "-o", str(work / "recorded")])
        _run(out, "share --from", ["snapshot", "--share", "--from", str(root), "-o", str(work / "from.tar.gz")])
        _run(out, "share", ["snapshot", "--share", "-o", str(work / "live.tar.gz")])
        audit = ["audit", "--snapshot", str(root), "--no-live"]
        _run(
            out,
            "audit",
            [*audit, "--json", str(work / "a.json"), "--report", str(work / "a.md"), "--transcript", str(work / "a.jsonl")],
        )
        with ScriptedOpenAIServer(_script(out.planted), default=final({"findings": []})) as server:
            llm = ["--llm", "--base-url", server.base_url, "--model", "scripted"]
            files = ["--json", str(work / "l.json"), "--report", str(work / "l.md"), "--transcript", str(work / "l.jsonl")]
            _run(out, "llm audit", [*audit, *llm, *files])
            server.assert_complete()
            for i, request in enumerate(server.requests):
                out.files[f"request {i} ({request.key})"] = json.dumps(request.body, ensure_ascii=False).encode()
        _run(
            out,
            "audit of the recording",
            ["audit", "--snapshot", str(work / "recorded"), "--no-live", "--json", str(work / "r.json")],
        )
    _collect(out, work)
    yield out


def _forms(secret: str) -> list[bytes]:
    """The secret as written raw, inside JSON, in UTF-16, and in base64 at each of its three alignments."""
    raw = secret.encode()
    forms = [raw, json.dumps(secret)[1:-1].encode(), secret.encode("utf-16-le"), secret.encode().hex().encode()]
    forms.append(secret.encode().hex().upper().encode())
    for shift in range(3):
        encoded = base64.b64encode(b"\x00" * shift + raw)
        forms.append(encoded[4 if shift else 0 : -4])
    return [f for f in forms if len(f) >= 8]


def test_every_command_ran(outputs: Outputs) -> None:
    assert outputs.codes == {
        "snapshot": 0,
        "share --from": 0,
        "share": 0,
        "audit": 0,
        "llm audit": 0,
        "audit of the recording": 0,
    }
    names = set(outputs.files)
    assert {"recorded/snapshot.json", "a.json", "a.md", "a.jsonl", "l.json", "l.md", "l.jsonl", "r.json"} <= names
    assert any(n.startswith("from.tar.gz:") for n in names) and any(n.startswith("live.tar.gz:") for n in names)
    requests = [n for n in names if n.startswith("request ")]
    assert len(requests) >= 13  # every investigator asked once, the kernel one six times


def _unpacked(files: dict[str, bytes]) -> dict[str, bytes]:
    """Every output, and the content of every gzip file among them (a rotated log in a bundle)."""
    out = dict(files)
    for name, data in files.items():
        if data[:2] == b"\x1f\x8b" and not name.endswith((".tar.gz", ".tgz")):
            out[f"{name} (unpacked)"] = gzip.decompress(data)
    return out


_BETWEEN = b"\n\x00<end of output>\x00\n"
"""What joins the outputs into one text to search (no secret's form holds it, so no match spans two outputs)."""


def test_no_planted_secret_is_in_any_output_byte(outputs: Outputs) -> None:
    leaks = []
    files = _unpacked(outputs.files)
    everything = _BETWEEN.join(files.values())  # one search a form; the outputs named only where one is found
    for secret in outputs.planted.secrets:
        for form in _forms(secret.value):
            assert _BETWEEN not in form
            if form in everything:
                leaks += [f"{secret.name} ({secret.where}) in {name}" for name, data in files.items() if form in data]
    assert leaks == []
    assert any(name.endswith("syslog.2.gz (unpacked)") for name in files)  # the rotated log was searched inside


def test_the_model_saw_the_notes_redacted_and_was_refused_the_environment(outputs: Outputs) -> None:
    bodies = [json.loads(data) for name, data in outputs.files.items() if name.startswith("request ") and "(kernel)" in name]
    first: dict[str, str] = {}  # each tool result as first sent whole (later requests resend it summarised)
    for body in bodies:
        for m in body["messages"]:
            if m.get("role") == "tool":
                first.setdefault(m["tool_call_id"], m["content"])
    tools = list(first.values())
    assert len(tools) == 5
    notes, environ, strings, ps, dmesg = tools
    assert "token: <redacted>" in notes and "client-key-data: <redacted>" in notes and "BEGIN RSA PRIVATE KEY" in notes
    assert environ.startswith("not read: ") and "secrets" in environ
    assert "--api-key\n<redacted>\n--auth\n<redacted>" in strings
    assert "--api-key <redacted> --port 30000" in ps and "password=<redacted>" in dmesg
    llm = json.loads(outputs.files["l.json"])
    # the model's claim cites the notes file, which does not hold the server's key: it is dropped, and what the model
    # wrote back is redacted in the reason too
    assert not [s for s in llm["suggestions"] if s["check"] == "kernel.operator_notes"]
    dropped = next(d for d in llm["dropped"] if d["check"] == "kernel.operator_notes")
    assert dropped["kind"] == "unsupported_claim" and f"openai_api_key={REDACTED}" in dropped["reason"].lower()


def test_the_settings_the_checks_need_are_kept_and_still_found(outputs: Outputs) -> None:
    pid = outputs.planted.pid
    recorded = outputs.files[f"recorded/files/proc/{pid}/environ"].split(b"\x00")
    assert b"NCCL_P2P_DISABLE=1" in recorded and b"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in recorded
    assert b"OPENAI_API_KEY=" + REDACTED.encode() in recorded and b"HOME=" + REDACTED.encode() in recorded
    bundle = outputs.files[f"from.tar.gz:files/proc/{pid}/environ"]
    assert b"NCCL_P2P_DISABLE=1" in bundle.split(b"\x00")
    for name in ("a.json", "r.json", "l.json"):
        finding = next(f for f in json.loads(outputs.files[name])["findings"] if f["check"] == "nccl.env")
        assert (finding["status"], finding["severity"]) == ("problem", "high"), name
        assert "NCCL_P2P_DISABLE=1" in finding["observed"], name


def test_no_planted_identity_is_in_a_bundle(outputs: Outputs) -> None:
    bundles = {n: d for n, d in outputs.files.items() if n.startswith(("from.tar.gz:", "live.tar.gz:"))}
    lowered = [(name, name.lower(), data.lower()) for name, data in bundles.items()]  # once, not once an identity
    leaks = [
        f"{identity} in {name}"
        for identity in outputs.planted.identities
        for name, low_name, low_data in lowered
        if identity.lower().encode() in low_data or identity.lower() in low_name
    ]
    assert leaks == []
    assert any("container-1" in d.decode("utf-8", "replace") for n, d in bundles.items() if n.endswith("lxc/101.conf"))


def test_the_bundle_counts_are_the_replacements_it_holds(outputs: Outputs) -> None:
    for archive in ("from.tar.gz", "live.tar.gz"):
        files = {n.split(":", 1)[1]: d for n, d in outputs.files.items() if n.startswith(f"{archive}:")}
        manifest = json.loads(files["snapshot.json"])["shared"]
        markers = (REDACTED.encode(), REDACTED.encode("utf-16-le"))  # a UTF-16 file holds its markers in UTF-16
        held = sum(d.count(m) for n, d in files.items() if not n.endswith("SHARE.md") for m in markers)
        assert manifest["redacted"]["total"] == held > 50, archive
        assert manifest["replaced"]["container"]["values"] >= 2 and manifest["replaced"]["user"]["values"] >= 5
        share_md = files["SHARE.md"].decode()
        assert f"redacted: {held} values in all" in share_md
        if archive == "from.tar.gz":  # the folder holds a binary journal and a rotated gzip log, the recording neither
            # a binary file rigaudit does not read is left out and counted; one it keeps has its tokens masked
            assert manifest["binary_files_left_out"] >= 1
            assert manifest["binary_tokens_masked"] + manifest["binary_files_left_out"] >= 2
    live = json.loads(outputs.files["live.tar.gz:snapshot.json"])
    assert live["shared"]["redacted"]["when_recorded"] > 0  # recorded first: the snapshot already held them redacted


def test_the_bundle_of_planted_identities_audits_to_the_same_findings(outputs: Outputs) -> None:
    from rigaudit.orchestrator.audit.run import run_audit
    from rigaudit.tools.share import unpack_bundle

    target = outputs.work / "unpacked"
    folder = unpack_bundle(outputs.work / "from.tar.gz", target)
    original = anyio.run(lambda: run_audit(SnapshotHost(outputs.root)))
    shared = anyio.run(lambda: run_audit(SnapshotHost(folder)))
    assert {(f.check, f.status, f.severity) for f in shared.findings} == {
        (f.check, f.status, f.severity) for f in original.findings
    }
    assert os.listdir(target) == [folder.name]
