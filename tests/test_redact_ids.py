"""Identifiers as digests (``tools/redact/_ids.py``): what is one, where it is found, and what is kept."""

from __future__ import annotations

import base64
import json

import pytest

from rigaudit.tools.bench.machine import digest, token
from rigaudit.tools.redact import Tally, as_digest, digest_ids, digest_nvml, file_kind, redact_json
from rigaudit.tools.schema.events.audit import ToolCall
from rigaudit.transcripts.writer import encode_event

MID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
BOOT = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/etc/machine-id", "machine-id"),
        ("/var/lib/dbus/machine-id", "machine-id"),
        ("/srv/snap/files/etc/machine-id", "machine-id"),
        ("/proc/sys/kernel/random/boot_id", "kernel-boot"),
        ("/dev/.lxc-boot-id", "container-boot"),
        ("/sys/class/dmi/id/product_uuid", "product-uuid"),
        ("/sys/devices/virtual/dmi/id/board_serial", "serial"),
        ("/srv/snap/files/sys/class/dmi/id/chassis_asset_tag", "serial"),
        ("/sys/class/nvme/nvme0/serial", "serial"),
        ("/sys/class/dmi/id/product_name", None),
        ("/proc/sys/kernel/random/uuid", None),
        ("/etc/hostname", None),
    ],
)
def test_the_files_that_hold_identifiers(path: str, kind: str | None) -> None:
    assert file_kind(path) == kind


def test_one_value_one_digest_wherever_it_is_printed() -> None:
    machine = token(MID.encode())
    assert machine == f"machine-id:{digest(MID)}"  # the audit's host_id digest
    assert digest_ids(MID + "\n", path="/etc/machine-id") == machine + "\n"
    assert digest_ids(f"Machine ID: {MID.upper()}") == f"Machine ID: {machine}"
    assert digest_ids(f"_MACHINE_ID={MID}") == f"_MACHINE_ID={machine}"
    boot = f"kernel-boot:{digest(BOOT)}"
    assert digest_ids(BOOT, path="/proc/sys/kernel/random/boot_id") == boot
    assert digest_ids(f"Boot ID: {BOOT.replace('-', '')}") == f"Boot ID: {boot}"  # hostnamectl writes it undashed
    assert digest_ids(f"_BOOT_ID={BOOT.replace('-', '')}") == f"_BOOT_ID={boot}"
    gpu = "GPU-8f3c0000-7e2d-4c1b-9f0a-3b8e0d6c0001"
    assert digest_ids(f"CUDA_VISIBLE_DEVICES={gpu},{gpu.lower()}") == "CUDA_VISIBLE_DEVICES=" + ",".join(
        [f"gpu-uuid:{digest(gpu[4:].lower())}"] * 2
    )
    assert digest_nvml("nvmlDeviceGetUUID", gpu) == f"gpu-uuid:{digest(gpu[4:].lower())}"
    assert digest_ids("MIG-" + gpu[4:]).startswith("mig-uuid:")


@pytest.mark.parametrize(
    ("text", "argv", "digested"),
    [
        (f"{MID}\n", ["cat", "/etc/machine-id"], [MID]),
        (f"{MID}\n", ["head", "-n1", "/var/lib/dbus/machine-id"], [MID]),
        (f"/etc/machine-id:{MID}\n/etc/hostname:gpu01\n", ["grep", "-r", ".", "/etc"], [MID]),
        (f"==> /proc/sys/kernel/random/boot_id <==\n{BOOT}\n\n==> /etc/hostname <==\ngpu01\n", ["head", "x", "y"], [BOOT]),
        ("SN-0042-XYZ\n", ["cat", "/sys/class/dmi/id/product_serial"], ["SN-0042-XYZ"]),
        ("/sys/class/dmi/id/board_serial:.4CX9PL2.CN7016350A0042.\n", ["grep", ".", "-r", "/sys/class/dmi/id"], ["4CX9PL2"]),
        (f"{BOOT}\n", ["cat", "/tmp/whatever"], [BOOT]),  # a UUID alone on a line, whatever printed it
    ],
)
def test_what_a_command_printed_by_the_files_it_names(text: str, argv: list[str], digested: list[str]) -> None:
    out = digest_ids(text, argv=argv, content=True)
    assert not [v for v in digested if v in out]
    assert "gpu01" in out or "gpu01" not in text


@pytest.mark.parametrize(
    "text",
    [
        "    Serial Number                         : 1654923000123",
        "\tSerial Number: .7XQ3PL2.CNFCP0023400AB.",
        "Board Serial          : WM2C71S00123",
        "  Hardware Serial: 7XQ3PL2",
        '{"serial": "1654923000123"}',
        "E: ID_SERIAL_SHORT=S4EWNX0R123456",
        "Capabilities: [148 v1] Device Serial Number 00-11-22-33-44-55-66-77",
        "NVIDIA H200, serial 1654923000123, UUID GPU-8f3c0000-7e2d-4c1b-9f0a-3b8e0d6c0001",
        "\tUUID: 4C4C4544-0051-3610-8039-C7C04F4B5A32",
        "    link/ether 3c:ec:ef:12:34:56 brd ff:ff:ff:ff:ff:ff",
        "    link/infiniband 80:00:00:48:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:a1:b2:c4 brd 00:ff:ff:ff:ff:12",
        "0002:c903:00a1:b2c4",
    ],
)
def test_labelled_and_shaped_values_become_digests(text: str) -> None:
    out = digest_ids(text)
    assert out != text
    for value in ("1654923000123", "7XQ3PL2", "WM2C71S00123", "S4EWNX0R123456", "00-11-22-33-44-55-66-77", "12:34:56"):
        assert value not in out
    assert "b2:c4" not in out and "b2c4" not in out.replace("b2c4", "") and "4C4C4544" not in out
    assert digest_ids(out) == out  # digesting twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "\tSerial Number: Not Specified",
        "\tSerial Number: To Be Filled By O.E.M.",
        "\tSerial Number: Default string",
        "Serial: 8250/16550 driver, 4 ports, IRQ sharing enabled",
        "console=ttyS0 serial console on 0000:c3:00.0",
        "    Board Part Number                     : 900-2G133-0000-000",
        "    link/ether 00:00:00:00:00:00 brd ff:ff:ff:ff:ff:ff",
        "01:00:5e:00:00:fb",  # a multicast group
        "inet6 fe80::1e34:da12:ab34:cd56/64 scope link",
        "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
        "2026-12-01 22:43:00.123 kernel: [  12.345678] pci 0000:c3:00.0: [10de:2bb5] type 00",
        "machine-id:1a2b3c4d5e6f7a8b serial:0123456789abcdef gpu-uuid:fedcba9876543210",
    ],
)
def test_what_identifies_nothing_is_kept(text: str) -> None:
    assert digest_ids(text) == text


def test_a_command_error_is_not_a_value() -> None:
    text = "cat: /sys/class/dmi/id/product_serial: Permission denied\n"
    assert digest_ids(text, argv=["cat", "/sys/class/dmi/id/product_serial"], content=True) == text
    assert as_digest("serial", "N/A") is None and as_digest("machine-id", "uninitialized") is None


def test_secrets_only_json_keeps_ids_and_ids_json_digests_them() -> None:
    """Snapshots, audit JSON and reports keep ids (redact_json); model requests and transcripts digest them."""
    data = {"op": "read", "target": "/etc/machine-id", "result": {"data_b64": base64.b64encode(MID.encode()).decode()}}
    assert redact_json(data) == data
    digested = redact_json(data, ids=True)
    assert base64.b64decode(digested["result"]["data_b64"]) == token(MID.encode()).encode()


def test_a_transcript_line_holds_the_digests() -> None:
    events = [
        ToolCall(
            op="read", target="/proc/sys/kernel/random/boot_id", result={"data_b64": base64.b64encode(BOOT.encode()).decode()}
        ),
        ToolCall(op="run", target="cat /etc/machine-id", args=["cat", "/etc/machine-id"], result={"stdout": MID + "\n"}),
        ToolCall(op="nvml", target="nvmlDeviceGetSerial", args=[0], result={"result": "1654923000123"}),
        ToolCall(
            op="read",
            target="/proc/1/environ",
            result={
                "data_b64": base64.b64encode(
                    b"CUDA_VISIBLE_DEVICES=GPU-8f3c0000-7e2d-4c1b-9f0a-3b8e0d6c0001\x00PATH=/bin\x00"
                ).decode()
            },
        ),
    ]
    lines = [json.loads(encode_event(e)) for e in events]
    assert base64.b64decode(lines[0]["result"]["data_b64"]) == f"kernel-boot:{digest(BOOT)}".encode()
    assert lines[1]["result"]["stdout"] == token(MID.encode()) + "\n"
    assert lines[2]["result"]["result"] == f"serial:{digest('1654923000123')}"
    environ = base64.b64decode(lines[3]["result"]["data_b64"])
    assert environ.startswith(b"CUDA_VISIBLE_DEVICES=gpu-uuid:") and environ.endswith(b"\x00PATH=/bin\x00")
    assert json.loads(encode_event(events[1], redact=False))["result"]["stdout"] == MID + "\n"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_binary_serials_in_a_transcript_are_zeroed_and_the_rest_kept() -> None:
    """PCI configuration space's Device Serial Number and VPD's SN, as share bundles zero them; links still decode."""
    from tests.support.diff import GPU0_CONFIG, SEED
    from tests.test_share_scrub import _vpd, _with_dsn

    config = _with_dsn((SEED / "files" / GPU0_CONFIG.lstrip("/")).read_bytes(), bytes.fromhex("2c1a8effff2db048"))
    calls = [ToolCall(op="read", target=GPU0_CONFIG, result={"data_b64": _b64(config)})]
    calls.append(ToolCall(op="read", target="/sys/bus/pci/devices/0000:01:00.0/vpd", result={"data_b64": _b64(_vpd())}))
    written = [base64.b64decode(json.loads(encode_event(c))["result"]["data_b64"]) for c in calls]
    assert written[0][0xF04:0xF0C] == bytes(8) and written[0][:0xF04] == config[:0xF04] and len(written[0]) == len(config)
    assert b"MT2142X12345" not in written[1] and b"MCX75310" in written[1]
    assert redact_json(json.loads(calls[0].model_dump_json()))["result"]["data_b64"] == _b64(config)  # a snapshot keeps it


def test_a_value_met_once_is_its_digest_wherever_and_however_it_is_printed() -> None:
    """tools/redact/_known.py: after one labelled print, the same value unlabelled, spaced, in part, in UTF-16, in
    base64 and in a hex dump is the same digest; a value only ``serial N`` in prose named is not looked for."""
    serial = "7XQ3PL2ABC"
    mine = f"serial:{digest(serial.lower())}"
    assert digest_ids(serial + "\n", content=True) == serial + "\n"  # nothing says it is one yet
    assert digest_ids(f"\tSerial Number: {serial}") == f"\tSerial Number: {mine}"
    assert digest_ids(serial + "\n", content=True) == mine + "\n"  # dmidecode -s, a link of another name
    assert digest_ids("\n".join(serial) + "\n", content=True) == mine + "\n"  # grep -o ., fold -w1
    assert digest_ids(f"nvme-Vendor_SSD_{serial}", content=True) == f"nvme-Vendor_SSD_{mine}"
    assert digest_ids(f".{serial}.CN0042.", content=True) == f".{serial}.CN0042."  # another (dotted) value's part
    assert digest_ids(serial[:5] + "\x00", content=True) == serial[:5] + "\x00"  # 5 characters name nothing
    assert mine in digest_ids("".join(c + "\x00" for c in serial), content=True).replace("\x00", "")
    encoded = base64.b64encode(serial.encode() + b"\n").decode()
    assert base64.b64decode(digest_ids(encoded + "\n", content=True)) == f"{mine}\n".encode()
    dump = "00000000: 3758 5133 504c 3241 4243 0a              7XQ3PL2ABC.\n"
    assert mine in digest_ids(dump, argv=["xxd", "/tmp/x"], content=True) and serial not in digest_ids(dump, content=True)
    assert digest_ids("NVIDIA H200, serial 1654923000123") != "NVIDIA H200, serial 1654923000123"
    assert digest_ids("1654923000123\n", content=True) == "1654923000123\n"  # prose is no source to learn from


def test_a_piece_of_a_known_id_is_its_digest_and_other_ids_groups_are_not() -> None:
    machine = token(MID.encode())
    assert digest_ids(MID, path="/etc/machine-id") == machine
    assert digest_ids(MID[:16], content=True) == machine  # head -c 16, a cut mid-value
    assert digest_ids(f"     1\t{MID}$\n", argv=["cat", "-n", "-A", "/etc/machine-id"], content=True) == f"     1\t{machine}$\n"
    assert digest_ids(f"Boot ID: {BOOT}") == f"Boot ID: kernel-boot:{digest(BOOT)}"
    other = "2b2c3d4e-5f60-4a7b-8c9d-" + BOOT[-12:]
    assert BOOT[-12:] in digest_ids(f"uuid {other}", content=True)  # a group of a UUID is another UUID's


def test_a_hex_dump_of_an_identifier_file_is_told_as_its_digest() -> None:
    data = MID.encode() + b"\n"
    xxd_p = data.hex() + "\n"
    od = "".join(" " + " ".join(f"{b:02x}" for b in data[i : i + 16]) + "\n" for i in range(0, len(data), 16))
    for text, argv in ((xxd_p, ["xxd", "-p", "/etc/machine-id"]), (od, ["od", "-An", "-tx1", "/etc/machine-id"])):
        out = digest_ids(text, argv=argv, content=True)
        assert token(MID.encode()) in out and data.hex()[:16] not in out


def test_whitespace_and_several_files_do_not_teach_a_value() -> None:
    lsblk = "NAME    SERIAL\nnvme0n1 S4EWNX0R123456\n"
    assert "nvme0n1" in digest_ids(lsblk, content=True)  # ``serial`` and the next line are not a label and its value
    out = digest_ids("7XQ3PL2\nXE9680-R\n", argv=["cat", "/sys/class/dmi/id/product_serial", "/etc/nvidia/n"], content=True)
    assert "XE9680-R" not in out  # which line was the serial is not known: both digested...
    assert digest_ids("XE9680-R", content=True) == "XE9680-R"  # ...and neither learned


def test_the_tally_counts_what_was_digested_and_nothing_else() -> None:
    """A known value's occurrences, each once; a long run of letters that is no piece of one is not counted."""
    assert digest_ids("\tSerial Number: 7XQ3PL2ABC").endswith(f"serial:{digest('7xq3pl2abc')}")
    tally = Tally()
    text = "host 7XQ3PL2ABC; madvise always neverneverland 0123456789abcdef; 7xq3pl2abc\n"
    out = digest_ids(text, content=True, tally=tally)
    assert out.count(f"serial:{digest('7xq3pl2abc')}") == 2 and tally["identifier"] == 2
    tally = Tally()
    assert digest_ids("always madvise [never] transparent_hugepage_enabled\n", content=True, tally=tally).startswith("always")
    assert tally["identifier"] == 0
