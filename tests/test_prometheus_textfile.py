"""``rigaudit check --prometheus``: the textfile's content, ``promtool check metrics`` on it, and a real
``prometheus-node-exporter`` (Debian's package, started on loopback) serving it.

promtool and node_exporter come from Debian's ``prometheus`` and ``prometheus-node-exporter`` packages
(``.ci/fleet-setup.sh`` installs them); without them those tests skip and say so. node_exporter runs as
``nobody`` when the test runs as root, as it does in production: the file must be readable by others.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.prometheus import _label, render
from rigaudit.tools.model.check import GATE_STATUSES, CheckResult
from tests.support.fleet import degrade_link, free_port
from tests.support.mutate import light_copy

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"
H200 = FIXTURES / "h200x2-vm"
SEED_MEDIUM = ("numa.balancing", "pcie.mrrs", "power.scaling_driver", "power.cstates")
NODE_EXPORTER = "prometheus-node-exporter"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")
_PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a text exposition (what a scraper sees), comments left out."""
    found = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        labels = dict(_PAIR.findall(match.group(2) or ""))
        found.append((match.group(1), labels, float(match.group(3))))
    return found


def gate(tmp_path: Path, root: Path, *extra: str) -> tuple[CheckResult, Path]:
    folder = tmp_path / "textfiles"
    folder.mkdir(exist_ok=True)
    prom, out = folder / "rigaudit.prom", tmp_path / "result.json"
    main(["check", "--snapshot", str(root), "--prometheus", str(prom), "--json", str(out), "-q", *extra])
    return CheckResult.model_validate_json(out.read_text()), prom


@pytest.fixture
def degraded(tmp_path: Path) -> Path:
    root = light_copy(SEED, tmp_path / "degraded")
    degrade_link(root)
    return root


def test_one_gauge_per_check_with_status_and_severity(tmp_path: Path, degraded: Path) -> None:
    result, prom = gate(tmp_path, degraded)
    found = samples(prom.read_text())
    checks = [(labels, value) for name, labels, value in found if name == "rigaudit_check_problem"]
    assert [labels["check"] for labels, _ in checks] == [c.check for c in result.checks]
    by_id = {labels["check"]: (labels, value) for labels, value in checks}
    assert by_id["pcie.link"] == ({"check": "pcie.link", "area": "pcie", "status": "problem", "severity": "high"}, 1.0)
    assert by_id["kernel.iommu"][1] == 0.0
    counts = {labels["status"]: value for name, labels, value in found if name == "rigaudit_checks"}
    assert set(counts) == set(GATE_STATUSES) and sum(counts.values()) == len(result.checks)
    assert counts["problem"] == sum(1 for c in result.checks if c.status == "problem")
    verdicts = {labels["verdict"]: value for name, labels, value in found if name == "rigaudit_check_verdict"}
    assert verdicts == {"healthy": 0.0, "problem": 1.0, "could_not_check": 0.0}
    single = {name: value for name, labels, value in found if not labels}
    assert single["rigaudit_check_exit_status"] == 1.0
    assert single["rigaudit_check_duration_seconds"] == pytest.approx(result.duration_s)
    assert single["rigaudit_check_timestamp_seconds"] == pytest.approx(result.finished_at)
    assert abs(single["rigaudit_check_timestamp_seconds"] - time.time()) < 600


def test_checks_not_made_are_listed_as_not_checked(tmp_path: Path) -> None:
    result, prom = gate(tmp_path, H200, "--replay-latency-ms", "400", "--deadline", "0.2", "--only", "pcie")
    statuses = {labels["status"] for name, labels, _ in samples(prom.read_text()) if name == "rigaudit_check_problem"}
    assert statuses == {"not_checked"} and result.exit_code == 3


def test_label_values_are_escaped() -> None:
    assert _label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_promtool_accepts_the_metrics(tmp_path: Path, degraded: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus): run .ci/fleet-setup.sh")
    for root in (degraded, H200):
        result, _ = gate(tmp_path, root)
        text = render(result)
        checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert checked.stdout.strip() == "" and checked.stderr.strip() == ""  # no lint complaint either


@contextlib.contextmanager
def node_exporter(directory: Path) -> Iterator[str]:
    """node_exporter with only the textfile collector, on a free loopback port; yields its /metrics URL."""
    program = shutil.which(NODE_EXPORTER)
    if program is None:
        pytest.skip(f"{NODE_EXPORTER} is not installed (Debian package prometheus-node-exporter): run .ci/fleet-setup.sh")
    port = free_port()
    argv = [
        program,
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={directory}",
    ]
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is not None:
        argv = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log: list[str] = []
    listening = threading.Event()

    def read_log() -> None:  # a thread: a pipe left unread would stall node_exporter
        assert process.stderr is not None
        for raw in iter(process.stderr.readline, b""):
            log.append(raw.decode(errors="replace").strip())
            if 'msg="Listening on"' in log[-1]:
                listening.set()
        listening.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        if not listening.wait(timeout=30) or process.poll() is not None:
            raise AssertionError(f"node_exporter did not listen: {' | '.join(log[-5:])}")
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        reader.join(timeout=10)  # the log's end: the process is gone
        if process.stderr is not None:
            process.stderr.close()


def scrape(url: str) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return samples(response.read().decode())


def test_node_exporter_serves_the_textfile(tmp_path: Path, degraded: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="rigaudit-textfile-"))  # outside pytest's 0700 folder: nobody must enter
    try:
        folder.chmod(0o755)
        prom = folder / "rigaudit.prom"
        assert main(["check", "--snapshot", str(H200), "--prometheus", str(prom), "-q"]) == 0
        with node_exporter(folder) as url:
            first = scrape(url)
            assert ("node_textfile_scrape_error", {}, 0.0) in first
            verdict = {labels["verdict"]: value for name, labels, value in first if name == "rigaudit_check_verdict"}
            assert verdict["healthy"] == 1.0
            mtime = [v for name, labels, v in first if name == "node_textfile_mtime_seconds" and labels["file"] == str(prom)]
            assert mtime, "node_exporter did not read the file"
            assert main(["check", "--snapshot", str(degraded), "--prometheus", str(prom), "-q"]) == 1
            second = scrape(url)
            assert ("node_textfile_scrape_error", {}, 0.0) in second
            problems = [labels for name, labels, value in second if name == "rigaudit_check_problem" and value == 1.0]
            assert {p["check"]: p["severity"] for p in problems} == {"pcie.link": "high", **dict.fromkeys(SEED_MEDIUM, "medium")}
            assert sorted(p.name for p in folder.iterdir()) == ["rigaudit.prom"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
