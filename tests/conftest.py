"""Shared test fixtures. Tests never reach the network beyond loopback, nor a real model."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"

_HYPOTHESIS_COMMON: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, max_examples=150, print_blob=True, **_HYPOTHESIS_COMMON)
"""CI: the same examples on every run and machine (derandomized, no example database), bounded in number."""
settings.register_profile("dev", max_examples=150, **_HYPOTHESIS_COMMON)
"""A developer's run: random examples (a failure found is kept in .hypothesis/ and replayed first)."""
settings.register_profile("explore", max_examples=5000, **_HYPOTHESIS_COMMON)
"""A long search for counterexamples: ``HYPOTHESIS_PROFILE=explore pytest tests/test_policy_*.py``."""


def hypothesis_profile(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """``HYPOTHESIS_PROFILE`` when set; otherwise ``ci`` under CI (``CI`` or ``RIGAUDIT_CI``), else ``dev``."""
    if named := environ.get("HYPOTHESIS_PROFILE"):
        return named
    return "ci" if environ.get("CI") or environ.get("RIGAUDIT_CI") else "dev"


settings.load_profile(hypothesis_profile())


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test: a SIGTERM (``timeout``, CI) stops the run as Ctrl-C does, so exit handlers still remove
    what the run wrote in RAM; and the generated snapshots of runs killed before that are removed."""
    del session
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    from tests.hostgen.cache import sweep

    sweep()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


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


@pytest.fixture(scope="session", autouse=True)
def _session_journal_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One journal key for the session, never the user's: a module's fixture may journal an apply before each test
    has its own state folder, and its tests roll that journal back (each state folder holds a hard link to it)."""
    from rigaudit.tools.actions.seal import key_path, load_key

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        load_key(create=True)
        yield key_path()


@pytest.fixture(scope="session", autouse=True)
def _audits_shared_by_workers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under pytest-xdist, the workers of a run keep the audits of generated hosts in one folder of the run's
    temporary base (tests/support/audits.py), so that a host is audited once per run, not once per worker."""
    if hasattr(request.config, "workerinput"):
        from tests.support.audits import share_with_workers

        share_with_workers(tmp_path_factory.getbasetemp().parent / "audits")


@pytest.fixture(autouse=True)
def _private_state_dirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, _session_journal_key: Path
) -> None:
    """Transcripts, journals and caches of tests go to temporary folders, never the user's (the journal key is the
    session's)."""
    base = tmp_path_factory.mktemp("xdg")
    keys = base / "state" / _session_journal_key.parent.parent.name / _session_journal_key.parent.name  # rigaudit/keys
    keys.mkdir(parents=True)
    keys.chmod(0o700)
    os.link(_session_journal_key, keys / _session_journal_key.name)
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))


@pytest.fixture(autouse=True)
def _no_identifiers_learned() -> None:
    """Each test starts knowing no host's identifiers (rigaudit.tools.redact._known keeps them per process)."""
    from rigaudit.tools.redact._known import forget

    forget()


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
