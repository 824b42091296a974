"""Identifiers printed where nothing says they are one, or in another form, never reach a model or a transcript.

The attack review of 2026-12-02 (docs/validation/attack-review.md): over the planted copy of
tests/test_llm_identifiers.py, an agent runs commands the read policy allows that print the host's ids without a
label or a file that tells (``dmidecode -s``, ``nvidia-smi --query-gpu=serial --format=csv``, ``cat`` of a link
of another name, ``strings`` of the DMI table, ``hostnamectl --json``, ``journalctl -o json``), decorated (``cat
-A``, ``nl``), in part (``head -c 16``), one character a line (``grep -o .``), as hex dumps (``xxd``, ``hexdump
-C``, ``od``), as UTF-16 and as base64, and a long output cut for the model. No request body and no transcript
byte holds a value in any of those forms, and each result shows the value's one digest.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
from collections.abc import Iterator

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, calls, final
from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.machine import digest, token
from tests.support.diff import SEED, scratch
from tests.support.mutate import light_copy, set_command, set_file
from tests.test_llm_identifiers import (
    BOOT_ID,
    CHASSIS_SERIAL,
    GPU_SERIAL,
    GPU_UUID,
    IDENTIFIERS,
    MACHINE_ID,
    PRODUCT_SERIAL,
    Audit,
    _forms,
    _plant,
)

NVME_SERIAL = "S5GXNF0R123456X"


def _xxd(data: bytes) -> str:
    rows = [data[i : i + 16] for i in range(0, len(data), 16)]
    return "".join(
        f"{k * 16:08x}: {' '.join(r[n : n + 2].hex() for n in range(0, len(r), 2)):<39}  "
        + "".join(chr(b) if 32 <= b < 127 else "." for b in r)
        + "\n"
        for k, r in enumerate(rows)
    )


def _hexdump_c(data: bytes) -> str:
    rows = [data[i : i + 16] for i in range(0, len(data), 16)]
    lines = []
    for k, r in enumerate(rows):
        left, right = " ".join(f"{b:02x}" for b in r[:8]), " ".join(f"{b:02x}" for b in r[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in r)
        lines.append(f"{k * 16:08x}  {left:<23}  {right:<23}  |{text}|\n")
    return "".join(lines) + f"{len(data):08x}\n"


def _od(data: bytes) -> str:
    rows = [data[i : i + 16] for i in range(0, len(data), 16)]
    return "".join(" " + " ".join(f"{b:02x}" for b in r) + "\n" for r in rows)


MID = MACHINE_ID.encode() + b"\n"
LONG = "".join(f"Dec 02 01:{i % 60:02d}:00 pve-gpu app[{i}]: host {MACHINE_ID} ok\n" for i in range(400))
COMMANDS = (
    ("dmidecode -s system-serial-number", PRODUCT_SERIAL + "\n"),
    ("nvidia-smi --query-gpu=serial,uuid --format=csv", f"serial, uuid\n{GPU_SERIAL}, {GPU_UUID}\n"),
    ("nvidia-smi --query-gpu=serial --format=csv,noheader", GPU_SERIAL + "\n"),
    ("cat /etc/nvidia/chassis", CHASSIS_SERIAL + "\n"),
    ("cat /etc/nvidia/disk", NVME_SERIAL + "\n"),
    ("strings /sys/firmware/dmi/tables/DMI", f"Dell Inc.\nPowerEdge XE9680\n{PRODUCT_SERIAL}\n{CHASSIS_SERIAL}\n"),
    ("hostnamectl --json=short", json.dumps({"MachineID": MACHINE_ID, "BootID": BOOT_ID.replace("-", "")}) + "\n"),
    ("journalctl -o json -n 1", json.dumps({"_MACHINE_ID": MACHINE_ID, "MESSAGE": "x"}) + "\n"),
    ("cat -A /etc/machine-id", MACHINE_ID + "$\n"),
    ("nl /etc/machine-id", f"     1\t{MACHINE_ID}\n"),
    ("head -c 16 /etc/machine-id", MACHINE_ID[:16]),
    ("grep -o . /etc/machine-id", "\n".join(MACHINE_ID) + "\n"),
    ("xxd /sys/class/dmi/id/chassis_serial", _xxd(CHASSIS_SERIAL.encode() + b"\n")),
    ("xxd -p /etc/machine-id", MID.hex() + "\n"),
    ("hexdump -C /etc/machine-id", _hexdump_c(MID)),
    ("od -An -tx1 /proc/sys/kernel/random/boot_id", _od(BOOT_ID.encode() + b"\n")),
    ("cat /etc/nvidia/board.utf16", "\ufeffServer: XE9680\r\nSerial Number: " + PRODUCT_SERIAL + "\r\n"),
    ("cat /etc/nvidia/board.b64", base64.b64encode(f"{CHASSIS_SERIAL}\n".encode()).decode() + "\n"),
    ("journalctl -n 400 --no-pager", LONG),
)


def _utf16(stdout: str) -> str:
    return stdout.encode("utf-16-le").decode("latin-1").replace("\xfe\xff", "")


@pytest.fixture(scope="module")
def audited() -> Iterator[Audit]:
    work = scratch("identifier-forms")
    root = light_copy(SEED, work / "snap")
    _plant(root)
    set_file(root, "/sys/class/nvme/nvme0/serial", NVME_SERIAL + "\n")
    for command, stdout in COMMANDS:
        out = stdout
        if command.endswith(".utf16"):
            out = "".join(c + "\x00" for c in stdout.lstrip("\ufeff"))
        set_command(root, command.split(), out)
    script = [calls(*[("shell", {"command": c}) for c, _ in COMMANDS]), final({"findings": []})]
    transcript, result = work / "audit.jsonl", work / "audit.json"
    with ScriptedOpenAIServer({"kernel": script}, default=final({"findings": []})) as server:
        argv = ["audit", "--snapshot", str(root), "--no-live", "--llm", "--base-url", server.base_url, "--model", "scripted"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main([*argv, "--transcript", str(transcript), "--json", str(result)])
        server.assert_complete()
        bodies = [r.body for r in server.requests]
    yield Audit(bodies, transcript, json.loads(result.read_text()), code)


VALUES = {**IDENTIFIERS, "nvme serial": NVME_SERIAL}


def _all_forms(value: str) -> list[bytes]:
    """``_forms``, and a piece of 10 characters at each end, hex (lower, upper), UTF-16 (raw and JSON-escaped)."""
    forms = set(_forms(value))
    for text in {value, value.lower(), value.upper()}:
        if len(text) >= 12:
            forms |= {text[:10].encode(), text[-10:].encode()}
        forms |= {text.encode().hex().encode(), text.encode().hex().upper().encode()}
        forms |= {text.encode("utf-16-le"), json.dumps(text.encode("utf-16-le").decode("latin-1"))[1:-1].encode()}
    return [f for f in forms if len(f) >= 6]


def _results(audit: Audit) -> dict[str, str]:
    first: dict[str, str] = {}
    for body in audit.bodies:
        for message in body["messages"]:  # type: ignore[attr-defined]
            if message.get("role") == "tool":
                first.setdefault(message["tool_call_id"], message["content"])
    return dict(zip((c for c, _ in COMMANDS), first.values(), strict=True))


def test_every_command_ran(audited: Audit) -> None:
    assert audited.code == 0
    results = _results(audited)
    assert not [c for c, r in results.items() if "not run" in r.split("\n", 1)[0]], results


def test_no_form_of_an_identifier_is_in_any_request_body(audited: Audit) -> None:
    sent = json.dumps(audited.bodies, ensure_ascii=False).encode()
    sent += json.dumps(audited.bodies).encode()
    assert [name for name, value in VALUES.items() for form in _all_forms(value) if form in sent] == []


def test_no_form_of_an_identifier_is_in_the_transcript(audited: Audit) -> None:
    data = audited.transcript.read_bytes()
    decoded = b"".join(base64.b64decode(m) for m in re.findall(rb'"data_b64":"([A-Za-z0-9+/=]*)"', data) if m)
    assert [name for name, value in VALUES.items() for form in _all_forms(value) if form in data + decoded] == []


def test_each_value_has_its_one_digest_whatever_printed_it(audited: Audit) -> None:
    machine, boot = token(MACHINE_ID.encode()), f"kernel-boot:{digest(BOOT_ID)}"
    product, chassis = f"serial:{digest(PRODUCT_SERIAL.lower())}", f"serial:{digest(CHASSIS_SERIAL.lower())}"
    gpu, nvme = f"serial:{digest(GPU_SERIAL)}", f"serial:{digest(NVME_SERIAL.lower())}"
    results = _results(audited)
    expected = {
        "dmidecode -s system-serial-number": [product],
        "nvidia-smi --query-gpu=serial,uuid --format=csv": [gpu],
        "nvidia-smi --query-gpu=serial --format=csv,noheader": [gpu],
        "cat /etc/nvidia/chassis": [chassis],
        "cat /etc/nvidia/disk": [nvme],
        "strings /sys/firmware/dmi/tables/DMI": [product, chassis],
        "hostnamectl --json=short": [machine, boot],
        "journalctl -o json -n 1": [machine],
        "cat -A /etc/machine-id": [machine],
        "nl /etc/machine-id": [machine],
        "head -c 16 /etc/machine-id": [machine],
        "grep -o . /etc/machine-id": [machine],
        "xxd /sys/class/dmi/id/chassis_serial": [chassis],
        "xxd -p /etc/machine-id": [machine],
        "hexdump -C /etc/machine-id": [machine],
        "od -An -tx1 /proc/sys/kernel/random/boot_id": [boot],
        "cat /etc/nvidia/board.b64": [],
        "journalctl -n 400 --no-pager": [machine],
    }
    missing = {c: [d for d in digests if d not in results[c]] for c, digests in expected.items()}
    assert {c: m for c, m in missing.items() if m} == {}
    assert "PowerEdge XE9680" in results["strings /sys/firmware/dmi/tables/DMI"]  # what identifies nothing is kept
    utf16 = results["cat /etc/nvidia/board.utf16"]
    assert "".join(c + "\x00" for c in product) in utf16 and "".join(c + "\x00" for c in "XE9680") in utf16
    b64 = results["cat /etc/nvidia/board.b64"].rsplit("\n", 1)[-1]  # the digest's base64 looks random: redacted too
    assert b64 == "<redacted>" or base64.b64decode(b64) == f"{chassis}\n".encode()
