"""A server that is not there: every command that sends load checks its --base-url first (one request, a deadline)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.fake_server import fake_server

LOAD = ["--model", "m", "--concurrency", "1", "--requests", "2", "--max-tokens", "4", "--warmup", "0", "--yes"]


@pytest.fixture(scope="module")
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [["bench", "inference"], ["bench", "inference", "--sessions", "2", "--json", "s.json"], ["bench", "calibrate"]],
)
def test_a_closed_port_is_one_line_before_any_request(
    command: list[str], closed_port: int, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"http://127.0.0.1:{closed_port}"
    assert main([*command, "--base-url", url, *LOAD, "--no-live", "--no-transcript"]) == 2
    out = capsys.readouterr()
    assert (
        out.err == f"rigaudit: --base-url {url}: nothing listens on 127.0.0.1:{closed_port} (is the server up, on this port?)\n"
    )
    assert "---" not in out.out and "requests/s" not in out.out  # no table of dashes: nothing was sent


def test_bench_ab_checks_the_server_before_it_asks_or_switches(
    closed_port: int, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.bench_ab import make_plan, make_snapshot

    monkeypatch.chdir(tmp_path)
    make_snapshot(tmp_path / "src")
    make_plan(tmp_path / "plan.json")
    argv = ["bench", "ab", "--plan", "plan.json", "--only", "vm.swappiness", "--snapshot", "src", "--into", "copy"]
    argv += ["--base-url", f"http://127.0.0.1:{closed_port}", *LOAD, "--journal", "j.jsonl", "--no-transcript"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"nothing listens on 127.0.0.1:{closed_port}" in err
    assert not (tmp_path / "j.jsonl").exists()


@pytest.mark.parametrize("tail", ["/v1/chat/completions", "/v1/completions", "/chat/completions/"])
def test_a_url_that_names_the_endpoint_says_what_to_drop(tail: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:1{tail}"
    assert main(["bench", "inference", "--base-url", url, *LOAD, "--no-transcript"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    dropped = tail.rstrip("/").removeprefix("/v1")
    assert f"drop {dropped} from the URL" in line


def test_a_model_the_server_does_not_list_is_said_and_the_run_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_server(model="served-model") as server:
        argv = ["bench", "inference", "--base-url", server.base_url, *LOAD, "--no-live", "--no-transcript"]
        assert main(argv) == 0
    out = capsys.readouterr()
    assert "--model m: " in out.out + out.err and "it lists served-model" in out.out + out.err
