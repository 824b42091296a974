"""Register writes computed from a config image, and applied to a snapshot copy."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci import PciRegisterError, apply_masked, parse_config, register_offset, register_write
from rigaudit.tools.pci.sysfs import config_path, read_config
from tests.support.mutate import light_copy, materialize

GPU = "0000:03:00.0"
ROOT_PORT = "0000:00:01.1"


def _bytes(seed: Path, bdf: str) -> bytes:
    path = SnapshotHost(seed).resolve(config_path(bdf))
    return (seed / "files" / path.lstrip("/")).read_bytes()


def test_apply_masked() -> None:
    assert apply_masked(0x283F, 0x5000, 0x7000) == 0x583F
    assert apply_masked(0x000D, 0x0000, 0x000C) == 0x0001
    assert apply_masked(0xFFFF, 0x1234, 0x0000) == 0xFFFF


def test_register_offsets(seed_dir: Path) -> None:
    gpu, root = _bytes(seed_dir, GPU), _bytes(seed_dir, ROOT_PORT)
    assert register_offset(gpu, "exp", 8) == 0x80
    assert register_offset(gpu, "header", 4) == 4
    assert register_offset(gpu, "ecap:0x0015", 8) == 0x168
    assert register_offset(root, "ecap:0x000d", 6) == 0x166
    assert register_offset(gpu, "ecap:0x000d", 6) is None  # the GPU has no ACS
    assert register_offset(gpu[:64], "exp", 8) is None  # unprivileged read: capability unknown
    assert register_offset(gpu, "ecap:nonsense", 6) is None
    assert register_offset(gpu, "msix", 0) is None


def test_register_write_bytes(seed_dir: Path) -> None:
    write = register_write(_bytes(seed_dir, GPU), "exp", 8, 2, 0x5000, 0x7000)
    assert (write.absolute_offset, write.old, write.new) == (0x80, 0x283F, 0x583F)
    assert write.data == b"\x3f\x58" and write.changes
    with pytest.raises(PciRegisterError, match="not present"):
        register_write(_bytes(seed_dir, GPU), "ecap:0x000d", 6, 2, 0, 0xC)
    with pytest.raises(PciRegisterError, match="aligned"):
        register_write(_bytes(seed_dir, GPU), "exp", 9, 2, 0, 0xC)


def test_write_into_snapshot_copy_takes_effect(seed_dir: Path, tmp_path: Path) -> None:
    seed_copy = light_copy(seed_dir, tmp_path / "seed")
    host = SnapshotHost(seed_copy, writable=True)
    materialize(seed_copy, host.resolve(config_path(GPU)))
    write = register_write(_bytes(seed_copy, GPU), "exp", 8, 2, 0x5000, 0x7000)
    anyio.run(lambda: host.write(config_path(GPU), write.data, offset=write.absolute_offset))
    config = anyio.run(read_config, Probe(SnapshotHost(seed_copy)), GPU).config
    assert config is not None and config.express is not None
    assert config.express.max_read_request == 4096 and config.express.max_payload == 256
    assert parse_config(_bytes(seed_copy, "0000:04:00.0")).express.max_read_request == 512  # type: ignore[union-attr]
    assert parse_config(_bytes(seed_dir, GPU)).express.max_read_request == 512  # type: ignore[union-attr]  # fixture intact
