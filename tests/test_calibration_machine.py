"""Calibrations are the machine's, not the host name's: a digest of /etc/machine-id keys them (never the id itself).

Two machines of one name (containers, cloned VMs, "localhost") keep apart, a renamed host keeps its own, a host
without a machine-id falls back to its name with one warning, and files stored by host name before still read and
move to the machine's key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.hosts.identity import machine_digest
from rigaudit.tools.bench import calibration as store
from rigaudit.tools.bench import loadgen
from rigaudit.tools.bench.calibration import calibrate, calibrations_dir, find, key, load_calibration, mismatch, save
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.like import differences, identity
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.machine import this_machine, token
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.testing.bench_pairs import Session, session_result
from tests.support.bench_files import write_results

RAW_A = "0123456789abcdef0123456789abcdef"
RAW_B = "fedcba9876543210fedcba9876543210"
A, B = token(RAW_A.encode()), token(RAW_B.encode())


def _sessions(host: str, host_id: str | None, count: int = 4, seed: int = 3) -> list[BenchResult]:
    import random

    rng = random.Random(seed)
    made = [session_result(rng, Session(session_cv=0.05), 5, 1.0) for _ in range(count)]
    return [r.model_copy(update={"host": host, "host_id": host_id}) for r in made]


def test_the_token_is_a_digest_of_the_id_as_audits_keep_it() -> None:
    assert f"machine-id:{machine_digest(RAW_A.encode())}" == A and RAW_A not in A
    assert token(b"uninitialized\n") == token(b"") == token(None) == token(b"xyz") == ""
    assert token(RAW_A.upper().encode() + b"\n") == A


def test_this_machine_reads_only_a_regular_file(tmp_path: Path) -> None:
    good = tmp_path / "machine-id"
    good.write_text(RAW_A + "\n")
    assert this_machine(good) == A
    assert this_machine(tmp_path / "missing") == ""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes it: a blocking read would hang
    assert this_machine(fifo) == ""
    assert this_machine(tmp_path) == ""


def test_two_machines_of_one_name_keep_their_own_calibrations() -> None:
    first, second = _sessions("localhost", A), _sessions("localhost", B, seed=4)
    cal_a, cal_b = calibrate(first, sources=["s"] * 4), calibrate(second, sources=["s"] * 4)
    assert (cal_a.host_id, cal_b.host_id) == (A, B)
    path_a, path_b = save(cal_a), save(cal_b)
    assert path_a != path_b
    found_a, found_b = find(first[0]), find(second[0])
    assert found_a is not None and found_a.calibration == cal_a and found_a.warning is None
    assert found_b is not None and found_b.calibration == cal_b and found_b.warning is None
    assert find(first[0].model_copy(update={"host_id": token(b"1" * 32)})) is None  # a third machine of that name
    assert any("machine-id" in d for d in mismatch(cal_a, second[0]))  # named with --calibration: refused
    assert differences(first[0], second[0]) == [
        "host localhost (machine-id " + A[11:19] + ") vs localhost (machine-id " + B[11:19] + ")"
    ]


def test_a_renamed_host_keeps_its_calibration() -> None:
    sessions = _sessions("gpu01", A)
    calibration = calibrate(sessions, sources=["s"] * 4)
    save(calibration)
    renamed = sessions[0].model_copy(update={"host": "gpu01-renamed"})
    found = find(renamed)
    assert found is not None and found.calibration == calibration and not mismatch(calibration, renamed)
    assert differences(sessions[0], renamed) == []


def test_sessions_of_several_machines_are_not_one_calibration() -> None:
    mixed = _sessions("n", A)[:2] + _sessions("n", B)[:2]
    with pytest.raises(BenchInputError, match="machine-id"):
        calibrate(mixed, sources=["s"] * 4)


def test_no_machine_id_falls_back_to_the_host_name_with_one_warning() -> None:
    sessions = _sessions("node1", None)
    calibration = calibrate(sessions, sources=["s"] * 4)
    assert calibration.host_id == ""
    path = save(calibration)
    assert path.name == f"{key(calibration.workload, 'node1')}.json"
    found = find(sessions[0])
    assert found is not None and found.calibration == calibration
    assert found.warning is not None and "\n" not in found.warning and "host name 'node1'" in found.warning


def _legacy(sessions: list[BenchResult], host: str) -> Path:
    """A calibration file as rigaudit wrote it before machine ids: no host_id, keyed by the host name."""
    data = json.loads(calibrate(sessions, sources=["s"] * 4).to_json())
    del data["host_id"]
    data["host"] = host
    folder = calibrations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key(data['workload'], host)}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_calibration_stored_by_host_name_still_reads_and_moves_to_the_machine() -> None:
    sessions = _sessions("gpu01", None)
    old = _legacy(sessions, "gpu01")
    result = sessions[0].model_copy(update={"host_id": A})
    found = find(result)
    assert found is not None and found.calibration.host_id == A and found.calibration.host == "gpu01"
    assert found.path.name == f"{key(identity(result), A)}.json" and not old.exists()
    assert load_calibration(found.path).host_id == A
    assert found.warning is not None and "moved to" in found.warning and RAW_A not in found.path.read_text()
    again = find(result)
    assert again is not None and again.path == found.path and again.warning is None
    assert find(result.model_copy(update={"host_id": B})) is None  # claimed: another machine of the name is not it


def test_a_stored_by_name_calibration_that_cannot_move_is_used_where_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = _sessions("gpu01", None)
    old = _legacy(sessions, "gpu01")

    def read_only(*_: object, **__: object) -> Path:
        raise BenchInputError("cannot store the calibration: read-only file system")

    monkeypatch.setattr(store, "save", read_only)
    found = find(sessions[0].model_copy(update={"host_id": A}))
    assert found is not None and found.path == old and old.exists()
    assert found.warning is not None and "could not be moved" in found.warning


def test_a_benchmark_records_its_machine_and_never_the_raw_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loadgen, "this_machine", lambda: A)
    spec = LoadSpec(base_url="http://127.0.0.1:1", model="m", concurrency=(1,))
    result = spec.result([], "2026-01-01T00:00:00+00:00")
    assert result.host_id == A and RAW_A not in result.to_json()
    assert BenchResult.model_validate_json(result.to_json()).host_id == A


def test_a_crafted_host_id_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_results(tmp_path, _sessions("n", A, count=2), first={"host_id": "machine-id:" + RAW_A})  # the raw id
    assert main(["bench", "compare", *paths, "--no-transcript"]) == 2
    err = capsys.readouterr().err
    assert "host_id" in err and "Traceback" not in err


def test_compare_says_in_one_line_when_it_found_the_calibration_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _sessions("node1", None, count=6)
    save(calibrate(sessions[2:], sources=["s"] * 4))
    paths = write_results(tmp_path, sessions[:2])
    assert main(["bench", "compare", *paths, "--no-transcript", "--no-live"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if "keyed by the host name 'node1'" in line]
    assert len(lines) == 1
