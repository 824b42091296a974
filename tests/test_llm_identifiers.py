"""Identifiers never reach a model or a transcript: an LLM audit of a snapshot with planted ids, every byte searched.

A copy of the seed holds a machine-id, a boot id, a DMI product UUID and serial numbers (one behind the
``/sys/class/dmi`` link, as on a real host), a NIC's MAC, and command output printing them (``cat``, ``head`` of
two files, ``grep`` of two, ``nvidia-smi -q``, ``ip link``, ``hostnamectl``, ``dmidecode``); the seed's NVML
answers hold GPU UUIDs and serial numbers. An agent of the scripted loopback model reads and runs all of them.
No request body the model received and no byte of the transcript holds any of the values (raw, JSON-escaped or
in base64 at any alignment), while each tool result shows the value's digest where the value was, the one
rigaudit keeps (the machine-id's is the audit's ``host_id``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rigaudit.agents.llm.testing.server import ScriptedOpenAIServer, calls, final
from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.machine import digest, token
from rigaudit.transcripts.reader import read_transcript
from tests.support.diff import SEED, scratch
from tests.support.mutate import light_copy, set_command, set_file, set_link

MACHINE_ID = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99"
BOOT_ID = "6b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
PRODUCT_UUID = "4c4c4544-0051-3610-8039-c7c04f4b5a32"
PRODUCT_SERIAL = "7XQ3PL2"
BOARD_SERIAL = ".7XQ3PL2.CNFCP0023400AB."
CHASSIS_SERIAL = "CZ2231X0GX"
MAC = "3c:ec:ef:12:34:56"
GPU_UUID = "GPU-5a1c0000-7e2d-4c1b-9f0a-3b8e0d6c0000"
"""The seed's own (NVML, GPU 0)."""
GPU_SERIAL = "1782523000000"
IDENTIFIERS = {
    "machine-id": MACHINE_ID,
    "boot id": BOOT_ID,
    "boot id, undashed": BOOT_ID.replace("-", ""),
    "product uuid": PRODUCT_UUID,
    "product serial": PRODUCT_SERIAL,
    "board serial": BOARD_SERIAL.strip("."),
    "chassis serial": CHASSIS_SERIAL,
    "mac": MAC,
    "gpu uuid": GPU_UUID[4:],
    "gpu serial": GPU_SERIAL,
}
DMI = "/sys/devices/virtual/dmi/id"

NVIDIA_SMI_Q = f"""==============NVSMI LOG==============
Attached GPUs                             : 8
GPU 00000000:04:00.0
    Product Name                          : NVIDIA RTX PRO 6000 Blackwell Server Edition
    Serial Number                         : {GPU_SERIAL}
    GPU UUID                              : {GPU_UUID}
    Board Part Number                     : 900-2G153-0000-000
"""
IP_LINK = f"""1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000
    link/ether {MAC.upper()} brd ff:ff:ff:ff:ff:ff
"""
HOSTNAMECTL = f""" Static hostname: pve-gpu
       Icon name: computer-server
      Machine ID: {MACHINE_ID}
         Boot ID: {BOOT_ID.replace("-", "")}
Operating System: Debian GNU/Linux 12 (bookworm)
"""
DMIDECODE = f"""# dmidecode 3.4
System Information
\tManufacturer: Dell Inc.
\tProduct Name: PowerEdge XE9680
\tSerial Number: {PRODUCT_SERIAL}
\tUUID: {PRODUCT_UUID.upper()}

Base Board Information
\tSerial Number: {BOARD_SERIAL}
\tAsset Tag: Not Specified
"""
READS = (
    "/etc/machine-id",
    "/proc/sys/kernel/random/boot_id",
    "/sys/class/dmi/id/product_uuid",
    "/sys/class/dmi/id/product_serial",
    "/sys/class/net/eth0/address",
)
COMMANDS = (
    ("cat /etc/machine-id", MACHINE_ID + "\n"),
    (
        "head /etc/machine-id /proc/sys/kernel/random/boot_id",
        f"==> /etc/machine-id <==\n{MACHINE_ID}\n\n==> /proc/sys/kernel/random/boot_id <==\n{BOOT_ID}\n",
    ),
    (
        "grep . /sys/class/dmi/id/product_serial /sys/class/dmi/id/board_serial",
        f"/sys/class/dmi/id/product_serial:{PRODUCT_SERIAL}\n/sys/class/dmi/id/board_serial:{BOARD_SERIAL}\n",
    ),
    ("cat /sys/class/dmi/id/chassis_serial", CHASSIS_SERIAL + "\n"),
    ("nvidia-smi -q", NVIDIA_SMI_Q),
    ("ip link", IP_LINK),
    ("hostnamectl", HOSTNAMECTL),
    ("dmidecode -t system", DMIDECODE),
)


def _plant(root: Path) -> None:
    set_file(root, "/etc/machine-id", MACHINE_ID + "\n")
    set_file(root, "/proc/sys/kernel/random/boot_id", BOOT_ID + "\n")
    set_link(root, "/sys/class/dmi", "../devices/virtual/dmi")
    for name, value in (
        ("product_uuid", PRODUCT_UUID),
        ("product_serial", PRODUCT_SERIAL),
        ("board_serial", BOARD_SERIAL),
        ("chassis_serial", CHASSIS_SERIAL),
        ("product_name", "PowerEdge XE9680"),
    ):
        set_file(root, f"{DMI}/{name}", value + "\n")
    set_file(root, "/sys/class/net/eth0/address", MAC + "\n")
    for command, stdout in COMMANDS:
        set_command(root, command.split(), stdout)


@dataclass
class Audit:
    bodies: list[dict[str, object]]
    transcript: Path
    result: dict[str, object]
    code: int


@pytest.fixture(scope="module")
def audited() -> Iterator[Audit]:
    work = scratch("identifiers")
    root = light_copy(SEED, work / "snap")
    _plant(root)
    script = [
        calls(*[("read_file", {"path": p}) for p in READS]),
        calls(*[("shell", {"command": c}) for c, _ in COMMANDS]),
        calls(
            ("nvml", {"function": "nvmlDeviceGetSerial", "args": [0]}), ("nvml", {"function": "nvmlDeviceGetUUID", "args": [0]})
        ),
        final({"findings": []}),
    ]
    transcript, result = work / "audit.jsonl", work / "audit.json"
    with ScriptedOpenAIServer({"kernel": script}, default=final({"findings": []})) as server:
        argv = ["audit", "--snapshot", str(root), "--no-live", "--llm", "--base-url", server.base_url, "--model", "scripted"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main([*argv, "--transcript", str(transcript), "--json", str(result)])
        server.assert_complete()
        bodies = [r.body for r in server.requests]
    yield Audit(bodies, transcript, json.loads(result.read_text()), code)


def _forms(value: str) -> list[bytes]:
    """The value raw, upper and lower case, JSON-escaped, and in base64 at each of its three alignments."""
    forms = set()
    for text in {value, value.lower(), value.upper()}:
        raw = text.encode()
        forms |= {raw, json.dumps(text)[1:-1].encode()}
        for shift in range(3):
            encoded = base64.b64encode(b"\x00" * shift + raw)
            forms.add(encoded[4 if shift else 0 : -4])
    return [f for f in forms if len(f) >= 6]


def _tool_results(audit: Audit) -> list[str]:
    """Every tool result of the kernel agent, as first sent whole (later requests resend them summarised)."""
    first: dict[str, str] = {}
    for body in audit.bodies:
        for message in body["messages"]:  # type: ignore[attr-defined]
            if message.get("role") == "tool":
                first.setdefault(message["tool_call_id"], message["content"])
    return list(first.values())


def test_the_agent_read_and_ran_everything(audited: Audit) -> None:
    assert audited.code == 0
    results = _tool_results(audited)
    assert len(results) == len(READS) + len(COMMANDS) + 2
    assert not [r for r in results if r.startswith(("not read", "not run", "error"))], results


def test_no_identifier_is_in_any_request_body(audited: Audit) -> None:
    sent = json.dumps(audited.bodies, ensure_ascii=False).encode()
    leaks = [name for name, value in IDENTIFIERS.items() for form in _forms(value) if form in sent]
    assert leaks == []


def test_no_identifier_is_in_the_transcript(audited: Audit) -> None:
    data = audited.transcript.read_bytes()
    leaks = [name for name, value in IDENTIFIERS.items() for form in _forms(value) if form in data]
    assert leaks == []
    assert read_transcript(audited.transcript).audit is not None  # still a transcript that replays


def _value(result: str) -> str:
    """What a tool result says below its frame (one value: a file's, or a command's output)."""
    return result.split("\n", 1)[1].strip().splitlines()[-1]


def test_the_agent_sees_each_value_as_its_digest(audited: Audit) -> None:
    machine = token(MACHINE_ID.encode())
    boot, product = f"kernel-boot:{digest(BOOT_ID)}", f"product-uuid:{digest(PRODUCT_UUID)}"
    serial = {name: f"serial:{digest(value.lower())}" for name, value in (("product", PRODUCT_SERIAL), ("board", BOARD_SERIAL))}
    gpu_uuid, gpu_serial, mac = f"gpu-uuid:{digest(GPU_UUID[4:].lower())}", f"serial:{digest(GPU_SERIAL)}", f"mac:{digest(MAC)}"
    results = dict(zip([*READS, *(c for c, _ in COMMANDS), "serial", "uuid"], _tool_results(audited), strict=True))
    assert _value(results["/etc/machine-id"]) == machine
    assert _value(results["/proc/sys/kernel/random/boot_id"]) == boot
    assert _value(results["/sys/class/dmi/id/product_uuid"]) == product  # read where the link leads
    assert _value(results["/sys/class/dmi/id/product_serial"]) == serial["product"]
    assert _value(results["/sys/class/net/eth0/address"]) == mac
    assert _value(results["cat /etc/machine-id"]) == machine
    assert f"==> /etc/machine-id <==\n{machine}\n" in results["head /etc/machine-id /proc/sys/kernel/random/boot_id"]
    grep = results["grep . /sys/class/dmi/id/product_serial /sys/class/dmi/id/board_serial"]
    assert f"product_serial:{serial['product']}\n" in grep and f"board_serial:{serial['board']}" in grep
    assert f"Serial Number                         : {gpu_serial}" in results["nvidia-smi -q"]
    assert f"GPU UUID                              : {gpu_uuid}" in results["nvidia-smi -q"]
    assert "Board Part Number                     : 900-2G153-0000-000" in results["nvidia-smi -q"]  # not an id: kept
    assert f"link/ether {mac} brd ff:ff:ff:ff:ff:ff" in results["ip link"] and "00:00:00:00:00:00" in results["ip link"]
    assert f"Machine ID: {machine}" in results["hostnamectl"] and f"Boot ID: {boot}" in results["hostnamectl"]
    assert "Static hostname: pve-gpu" in results["hostnamectl"]  # the host name is what the model is told
    dmidecode = results["dmidecode -t system"]
    assert f"Serial Number: {serial['product']}" in dmidecode and f"Serial Number: {serial['board']}" in dmidecode
    assert "Product Name: PowerEdge XE9680" in dmidecode and "Asset Tag: Not Specified" in dmidecode
    assert results["serial"].endswith(f'"{gpu_serial}"') and results["uuid"].endswith(f'"{gpu_uuid}"')
    assert dict(audited.result["host"]["facts"])["host_id"].startswith(machine)  # type: ignore[index]


def test_a_rediagnosis_of_the_transcript_knows_the_machine(audited: Audit, tmp_path: Path) -> None:
    """The transcript's snapshot holds the digests: the host is the same machine, and no finding changed."""
    out, kept = tmp_path / "changes.json", tmp_path / "s"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(
            ["replay", str(audited.transcript), "--rediagnose", "--json", str(out), "--save-snapshot", str(tmp_path / "s")]
        )
    assert code == 0, out.read_text()
    assert (kept / "files" / "etc" / "machine-id").read_text().strip() == token(MACHINE_ID.encode())
