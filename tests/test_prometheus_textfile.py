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
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.prometheus import SEVERITY_VALUES, STATUS_VALUES, VERDICT_VALUES, _label, render
from rigaudit.tools.schema.check import GATE_STATUSES, CheckResult
from tests.support.fleet import degrade_link, free_port
from tests.support.mutate import light_copy

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"
H200 = FIXTURES / "h200x2-vm"
SEED_MEDIUM = ("numa.balancing", "pcie.mrrs", "power.scaling_driver")
"""power.cstates is low on the seed (no server visible: the batch-1 premise of its medium is unread)."""
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


def test_one_stable_series_per_check_its_status_a_value(tmp_path: Path, degraded: Path) -> None:
    result, prom = gate(tmp_path, degraded)
    found = samples(prom.read_text())
    host = {"Hostname": result.host}
    status = {labels["check"]: (labels, value) for name, labels, value in found if name == "rigaudit_check_status"}
    assert list(status) == [c.check for c in result.checks]
    assert status["pcie.link"] == ({"check": "pcie.link", "area": "pcie", **host}, float(STATUS_VALUES["problem"]))
    assert status["kernel.iommu"][1] == STATUS_VALUES["ok"]
    severity = {labels["check"]: value for name, labels, value in found if name == "rigaudit_check_severity"}
    assert severity["pcie.link"] == SEVERITY_VALUES["high"] and severity["kernel.iommu"] == 0
    decided = {labels["check"] for name, labels, value in found if name == "rigaudit_check_decided" and value == 1}
    assert decided == {c.check for c in result.checks if c.counts}
    counts = {labels["status"]: value for name, labels, value in found if name == "rigaudit_checks"}
    assert set(counts) == set(GATE_STATUSES) and sum(counts.values()) == len(result.checks)
    single = {name: (labels, value) for name, labels, value in found if set(labels) == {"Hostname"}}
    assert single["rigaudit_check_verdict"] == (host, float(VERDICT_VALUES["problem"]))
    assert single["rigaudit_check_exit_status"][1] == 1.0
    assert single["rigaudit_check_duration_seconds"][1] == pytest.approx(result.duration_s)
    assert single["rigaudit_check_timestamp_seconds"][1] == pytest.approx(result.finished_at)
    assert single["rigaudit_check_last_success_timestamp_seconds"][1] == pytest.approx(result.finished_at)


def test_per_gpu_series_carry_dcgm_exporters_labels(tmp_path: Path, degraded: Path) -> None:
    result, prom = gate(tmp_path, degraded)
    found = samples(prom.read_text())
    info = [labels for name, labels, _ in found if name == "rigaudit_gpu_info"]
    assert [i["gpu"] for i in info] == [str(g.gpu) for g in result.gpus] and len(info) == 8
    assert all(set(i) == {"gpu", "UUID", "pci_bus_id", "model_name", "Hostname"} for i in info)
    assert info[3]["pci_bus_id"] == "00000000:44:00.0" and info[3]["UUID"].startswith("GPU-")
    worst = {labels["gpu"]: value for name, labels, value in found if name == "rigaudit_gpu_severity"}
    assert worst["3"] == SEVERITY_VALUES["high"]  # the degraded link is GPU3's
    assert set(worst.values()) <= {float(SEVERITY_VALUES["high"]), float(SEVERITY_VALUES["medium"])}


def test_checks_not_made_keep_the_last_success(tmp_path: Path) -> None:
    first, prom = gate(tmp_path, H200, "--only", "pcie")
    result, prom = gate(tmp_path, H200, "--replay-latency-ms", "400", "--deadline", "0.2", "--only", "pcie")
    found = samples(prom.read_text())
    statuses = {value for name, labels, value in found if name == "rigaudit_check_status" and labels["area"] == "pcie"}
    assert statuses == {float(STATUS_VALUES["not_checked"])} and result.exit_code == 3
    last = [value for name, _, value in found if name == "rigaudit_check_last_success_timestamp_seconds"]
    assert last == [pytest.approx(first.finished_at)] and first.finished_at < result.finished_at


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
            verdict = [value for name, labels, value in first if name == "rigaudit_check_verdict"]
            assert verdict == [VERDICT_VALUES["healthy"]]
            mtime = [v for name, labels, v in first if name == "node_textfile_mtime_seconds" and labels["file"] == str(prom)]
            assert mtime, "node_exporter did not read the file"
            assert main(["check", "--snapshot", str(degraded), "--prometheus", str(prom), "-q"]) == 1
            second = scrape(url)
            assert ("node_textfile_scrape_error", {}, 0.0) in second
            severity = {labels["check"]: value for name, labels, value in second if name == "rigaudit_check_severity" and value}
            wanted = {"pcie.link": "high", **dict.fromkeys(SEED_MEDIUM, "medium"), "power.cstates": "low"}
            assert severity == {check: SEVERITY_VALUES[s] for check, s in wanted.items()}
            assert sorted(p.name for p in folder.iterdir()) == ["rigaudit.prom"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
