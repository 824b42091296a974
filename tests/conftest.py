"""Shared test fixtures. Tests never reach the network beyond loopback, nor a real model."""

from __future__ import annotations

import ipaddress
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str):  # AF_UNIX
        return True
    host = address[0] if isinstance(address, tuple) else address
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _private_state_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Transcripts, journals and caches of tests go to temporary folders, never the user's."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))


@pytest.fixture(autouse=True)
def _release_light_copies() -> Iterator[None]:
    """The light copies a test made (tests.support.mutate.light_copy) go when it ends (they live in RAM)."""
    from tests.support.mutate import live_copies, release_light_copies

    before = live_copies()
    yield
    release_light_copies(before)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection to a non-loopback address fails the test at once."""
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setenv("RIGAUDIT_BLOCK_REAL_LLM", "1")
    yield


@pytest.fixture
def seed_dir() -> Path:
    """The seed snapshot (read-only: never write into it)."""
    return SEED


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A private, writable copy of the seed snapshot for mutation tests."""
    target = tmp_path / "seed"
    shutil.copytree(SEED, target)
    return target
