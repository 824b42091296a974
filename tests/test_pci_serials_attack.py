"""Device Serial Numbers a crafted or unusual configuration space holds (attack review, 2026-12-02): every one is
zeroed wherever share bundles and transcripts zero one, and printed another way (a hex dump of the file,
``setpci ... ECAP_DSN+4.l``) it is the same digest, never the value."""

from __future__ import annotations

import base64
import json
import struct

from rigaudit.tools.bench.machine import digest
from rigaudit.tools.pci import DSN_ID, dsn_serials, parse_config, zero_dsn
from rigaudit.tools.redact import digest_ids
from rigaudit.tools.schema.events.audit import ToolCall
from rigaudit.transcripts.writer import encode_event
from tests.support.diff import GPU0_CONFIG, SEED
from tests.test_share_scrub import _with_dsn

SERIAL = bytes.fromhex("2c1a8effff2db048")
OTHER = bytes.fromhex("1122334455667788")
ORIGINAL = (SEED / "files" / GPU0_CONFIG.lstrip("/")).read_bytes()


def _two_dsns() -> bytes:
    """A DSN at 0xF00, and a second one chained after it at 0xF40."""
    data = bytearray(_with_dsn(ORIGINAL, SERIAL))
    struct.pack_into("<I", data, 0xF00, DSN_ID | (1 << 16) | (0xF40 << 20))
    struct.pack_into("<I", data, 0xF40, DSN_ID | (1 << 16))
    data[0xF44:0xF4C] = OTHER
    return bytes(data)


def _no_express(config: bytes) -> bytes:
    """The same space with its capability list off (status bit 4 clear): the audit follows no Express capability."""
    data = bytearray(config)
    data[0x06] &= ~0x10
    return bytes(data)


def test_every_serial_is_zeroed_however_the_space_is_laid_out() -> None:
    for crafted in (_two_dsns(), _no_express(_with_dsn(ORIGINAL, SERIAL))):
        result = zero_dsn(crafted)
        assert result is not None and result[1]
        assert SERIAL not in result[0] and OTHER not in result[0] and len(result[0]) == len(crafted)
    assert parse_config(_no_express(ORIGINAL)).express is None  # what the audit makes of it: no Express capability
    assert dsn_serials(_two_dsns()) == (SERIAL, OTHER)


def test_a_transcript_zeroes_both_and_knows_them_printed_by_setpci_and_lspci() -> None:
    config = _two_dsns()
    read = ToolCall(op="read", target=GPU0_CONFIG, result={"data_b64": base64.b64encode(config).decode()})
    written = base64.b64decode(json.loads(encode_event(read))["result"]["data_b64"])
    assert SERIAL not in written and OTHER not in written
    low = f"{int.from_bytes(SERIAL[:4], 'little'):08x}"
    token = f"serial:{digest('-'.join(f'{b:02x}' for b in reversed(SERIAL)))}"
    setpci = ToolCall(op="run", target="setpci", args=["setpci", "-s", "03:00.0", "ECAP_DSN+4.l"], result={"stdout": low + "\n"})
    assert json.loads(encode_event(setpci))["result"]["stdout"] == token + "\n"
    assert digest_ids("Capabilities: [f00 v1] Device Serial Number 48-b0-2d-ff-ff-8e-1a-2c").endswith(token)


def test_a_hex_dump_of_a_configuration_space_has_its_serials_zeroed() -> None:
    config = _two_dsns()
    rows = [config[i : i + 16] for i in range(0, len(config), 16)]
    dump = "".join(
        f"{k * 16:08x}: " + " ".join(r[n : n + 2].hex() for n in range(0, 16, 2)) + "  ................\n"
        for k, r in enumerate(rows)
    )
    out = digest_ids(dump, argv=["xxd", GPU0_CONFIG], content=True)
    assert SERIAL.hex()[:8] not in out.replace(" ", "") and OTHER.hex()[4:12] not in out.replace(" ", "")
    assert "de10" in out  # the rest of the space is still there (NVIDIA's vendor id)
