"""rigaudit.tools.pci decodes configuration space: the seed's real images, cross-checked with lspci, and edge cases."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci import PciConfig, PciConfigError, parse_config
from rigaudit.tools.pci.sysfs import read_config

GPU = "0000:03:00.0"
ROOT_PORT = "0000:00:01.1"
DOWNSTREAM = ("0000:02:00.0", "0000:02:01.0")


def _config(seed: Path, bdf: str) -> PciConfig:
    result = anyio.run(read_config, Probe(SnapshotHost(seed)), bdf)
    assert result.config is not None, result.error
    return result.config


def test_gpu_config_found_through_sysfs_link(seed_dir: Path) -> None:
    result = anyio.run(read_config, Probe(SnapshotHost(seed_dir)), GPU)
    assert result.error is None and result.ref == f"file:/sys/bus/pci/devices/{GPU}/config"
    config = result.config
    assert config is not None
    assert (config.vendor_id, config.device_id, config.class_code) == (0x10DE, 0x2BB5, 0x030200)
    assert config.header_type == 0 and not config.is_bridge and config.status & 0x10
    assert [c.id for c in config.capabilities] == [0x01, 0x05, 0x10]
    assert config.capabilities_complete and config.extended_known and config.warnings == ()


def test_gpu_express_fields(seed_dir: Path) -> None:
    express = _config(seed_dir, GPU).express
    assert express is not None and express.offset == 0x78
    assert express.port_type_name == "endpoint"
    assert express.max_read_request == 512
    assert (express.max_payload_supported, express.max_payload) == (256, 256)
    assert (express.link_max_gen, express.link_max_width, express.link_gen, express.link_width) == (5, 16, 5, 16)
    assert express.link_speed_gts == 32.0 and express.link_max_speed_gts == 32.0


def test_gpu_resizable_bar_and_aer(seed_dir: Path) -> None:
    config = _config(seed_dir, GPU)
    assert config.aer is not None and config.aer.offset == 0x100
    assert config.acs is None
    assert config.rebar is not None
    bar1 = config.rebar.bar(1)
    assert bar1 is not None
    assert bar1.current_size == 128 << 30
    assert min(bar1.supported_sizes) == 1 << 20 and bar1.largest_supported == 128 << 30


def test_acs_on_root_port_and_switch_ports(seed_dir: Path) -> None:
    root = _config(seed_dir, ROOT_PORT)
    assert root.is_bridge and root.express is not None and root.express.port_type_name == "root port"
    assert root.acs is not None and root.acs.offset == 0x160
    assert root.acs.capability.names == ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "DirectTrans")
    assert root.acs.control.raw == 0 and not root.acs.redirects
    for bdf in DOWNSTREAM:
        port = _config(seed_dir, bdf)
        assert port.express is not None and port.express.port_type_name == "switch downstream port"
        # Extended space was read in full and has no ACS capability: absent, not unknown.
        assert port.extended_known and port.acs is None
        assert [hex(e.id) for e in port.extended] == ["0x1"]


def _lspci_blocks(seed: Path) -> dict[str, str]:
    for line in (seed / "commands.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["argv"] == ["lspci", "-vvv"]:
            text = record["stdout"]
            break
    else:  # pragma: no cover - the fixture records it
        pytest.fail("lspci -vvv not in the seed")
    return {"0000:" + block.split(" ", 1)[0]: block for block in text.strip().split("\n\n")}


def _expect(pattern: str, block: str) -> tuple[str, ...]:
    match = re.search(pattern, block)
    assert match, pattern
    return match.groups()


@pytest.mark.parametrize("bdf", [GPU, "0000:c4:00.0", ROOT_PORT, "0000:01:00.0", "0000:42:01.0"])
def test_decoded_values_match_lspci(seed_dir: Path, bdf: str) -> None:
    block = _lspci_blocks(seed_dir)[bdf]
    config = _config(seed_dir, bdf)
    express = config.express
    assert express is not None
    payload, read_req = _expect(r"DevCtl:.*?MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes", block.replace("\n", " "))
    assert (express.max_payload, express.max_read_request) == (int(payload), int(read_req))
    assert express.max_payload_supported == int(_expect(r"DevCap:\s+MaxPayload (\d+) bytes", block)[0])
    cap_speed, cap_width = _expect(r"LnkCap:.*?Speed (\d+)GT/s, Width x(\d+)", block)
    assert (express.link_max_speed_gts, express.link_max_width) == (float(cap_speed), int(cap_width))
    sta_speed, sta_width = _expect(r"LnkSta:\s+Speed (\d+)GT/s, Width x(\d+)", block)
    assert (express.link_speed_gts, express.link_width) == (float(sta_speed), int(sta_width))
    acs = re.search(r"ACSCtl:\s+(.*)", block)
    assert (config.acs is not None) == (acs is not None)
    if config.acs is not None and acs is not None:
        assert set(config.acs.control.names) == {flag[:-1] for flag in acs.group(1).split() if flag.endswith("+")}
    rebar = re.search(r"BAR 1: current size: (\d+)GB", block)
    assert (config.rebar is not None) == (rebar is not None)
    if config.rebar is not None and rebar is not None:
        bar1 = config.rebar.bar(1)
        assert bar1 is not None and bar1.current_size == int(rebar.group(1)) << 30


def _gpu_bytes(seed: Path) -> bytes:
    path = SnapshotHost(seed).resolve(f"/sys/bus/pci/devices/{GPU}/config")
    return (seed / "files" / path.lstrip("/")).read_bytes()


def test_unprivileged_64_byte_read_leaves_capabilities_unknown(seed_dir: Path) -> None:
    config = parse_config(_gpu_bytes(seed_dir)[:64])
    assert config.vendor_id == 0x10DE and config.class_code == 0x030200
    assert not config.capabilities_complete and not config.express_known
    assert config.express is None and not config.extended_known and config.rebar is None


def test_256_byte_read_has_express_but_no_extended(seed_dir: Path) -> None:
    config = parse_config(_gpu_bytes(seed_dir)[:256])
    assert config.express is not None and config.express.max_read_request == 512
    assert not config.extended_known and config.extended == () and config.acs is None


def test_capability_loops_end(seed_dir: Path) -> None:
    data = bytearray(_gpu_bytes(seed_dir))
    data[0x78 + 1] = 0x60  # PCI Express capability points back to the first one
    data[0x100 + 3] = 0x10  # AER's next pointer: 0x100, itself
    data[0x100 + 2] = 0x02
    config = parse_config(bytes(data))
    assert [c.id for c in config.capabilities] == [0x01, 0x05, 0x10]
    assert [e.id for e in config.extended] == [0x0001]
    assert any("loops" in w for w in config.warnings)


def test_bars_decoded() -> None:
    data = bytearray(256)
    data[0:2] = (0x10DE).to_bytes(2, "little")
    data[0x10:0x14] = (0xF0000000).to_bytes(4, "little")  # 32-bit memory
    data[0x14:0x18] = (0x0000000C).to_bytes(4, "little")  # 64-bit prefetchable, low half
    data[0x18:0x1C] = (0x00000280).to_bytes(4, "little")  # high half
    data[0x1C:0x20] = (0x0000E001).to_bytes(4, "little")  # I/O
    bars = parse_config(bytes(data)).bars
    assert [(b.index, b.kind, b.prefetchable) for b in bars[:3]] == [(0, "mem32", False), (1, "mem64", True), (3, "io", False)]
    assert bars[1].address == 0x280_0000_0000 and bars[2].address == 0xE000


@pytest.mark.parametrize("data", [b"", b"\x00" * 16, b"\xff" * 4096])
def test_not_a_config_space(data: bytes) -> None:
    with pytest.raises(PciConfigError):
        parse_config(data)
