"""The P2P report from recorded measurements: link limits from (fake) NVML, verdicts, the saved file, missing torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench import gpu, p2p
from rigaudit.tools.bench.errors import BenchInputError, BenchUnavailable
from rigaudit.tools.bench.links import GpuLinks, NvLink, norm_bus_id, pair_limit, pcie_limit, read_links
from rigaudit.tools.bench.p2p import GpuInfo, PairMeasurement, build_report, judge_pair, save_for_audit
from tests.support.replay import live_then_replayed, same

H200_BUS = ("0000:1b:00.0", "0000:43:00.0")


def _switched(bus: str) -> GpuLinks:
    return GpuLinks(bus, 9, 5, 16, [NvLink("0000:05:00.0", "switch")] * 18)


def _pcie(bus: str, gen: int = 5, width: int = 16) -> GpuLinks:
    return GpuLinks(bus, 12, gen, width, [])


def test_pcie_and_nvlink_limits() -> None:
    assert pcie_limit(5, 16) == pytest.approx(63.0, abs=0.01)
    assert pcie_limit(4, 16) == pytest.approx(31.5, abs=0.01)
    assert pcie_limit(None, 16) is None and pcie_limit(9, 16) is None
    nv = pair_limit(_switched(H200_BUS[0]), _switched(H200_BUS[1]))
    assert (nv.kind, nv.limit_gbps) == ("nvlink", 450.0) and "NV18" in nv.detail
    # direct links count only those that reach the destination
    direct = GpuLinks(H200_BUS[0], 8, 4, 16, [NvLink(H200_BUS[1], "gpu")] * 4 + [NvLink("0000:99:00.0", "gpu")] * 8)
    assert pair_limit(direct, _pcie(H200_BUS[1], 4)).limit_gbps == 100.0
    # PCIe: the slower end sets the limit
    slow = pair_limit(_pcie("0000:01:00.0"), _pcie("0000:02:00.0", gen=4, width=8))
    assert slow.kind == "pcie" and slow.limit_gbps == pytest.approx(15.75, abs=0.01) and "Gen4 x8" in slow.detail
    unknown = pair_limit(GpuLinks(None, error="NVML unavailable: no library"), _pcie("0000:02:00.0"))
    assert unknown.limit_gbps is None and "NVML unavailable" in unknown.detail


def test_bus_ids_normalise() -> None:
    assert norm_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert norm_bus_id(b"0000:1b:00.0\x00".rstrip(b"\x00")) == "0000:1b:00.0"
    assert norm_bus_id("1b:00.0") == "0000:1b:00.0"
    assert norm_bus_id("garbage") is None and norm_bus_id(None) is None


def _m(uni: float = 390.0, bi: float = 760.0, staged: float = 25.0, ok: bool = True, access: bool = True) -> PairMeasurement:
    return PairMeasurement(0, 1, access, uni, bi, staged, ok, None if ok else "12 of 67108864 words differ, first at byte 4096")


def test_healthy_nvlink_pair() -> None:
    pair = judge_pair(_m(), pair_limit(_switched(H200_BUS[0]), _switched(H200_BUS[1])))
    assert pair.problems == [] and pair.fraction_of_limit == pytest.approx(390 / 450)


def test_corruption_is_a_failure_not_a_number() -> None:
    pair = judge_pair(_m(ok=False), pair_limit(_switched(H200_BUS[0]), _switched(H200_BUS[1])))
    assert not pair.data_ok and pair.unidir_gbps is None and pair.bidir_gbps is None
    assert "data corrupted" in pair.problems[0] and "byte 4096" in pair.problems[0]


def test_slow_pairs_are_problems() -> None:
    pcie = pair_limit(_pcie("0000:01:00.0"), _pcie("0000:02:00.0"))
    assert judge_pair(_m(uni=52.0, bi=100.0, staged=20.0), pcie).problems == []
    far = judge_pair(_m(uni=30.0, bi=55.0, staged=20.0), pcie)
    assert any("48% of the PCIe Gen5 x16" in p for p in far.problems)
    slower = judge_pair(_m(uni=18.0, bi=30.0, staged=20.0), pcie)
    assert any("slower than staging through the host" in p for p in slower.problems)
    no_peer = judge_pair(_m(uni=20.0, access=False), pcie)
    assert any("peer access not available" in p for p in no_peer.problems)


def _report(ok: bool = True) -> p2p.P2PReport:
    gpus = [GpuInfo(0, "NVIDIA H200", H200_BUS[0], 9), GpuInfo(1, "NVIDIA H200", H200_BUS[1], 9)]
    measured = [
        PairMeasurement(0, 1, True, 391.2, 772.0, 24.9, ok, None if ok else "bad"),
        PairMeasurement(1, 0, True, 390.8, 771.5, 25.1, True),
    ]
    links = [_switched(H200_BUS[0]), _switched(H200_BUS[1])]
    return build_report(
        measured, gpus, links, backend="torch", size_mib=256, iters=20, taken_at="2026-01-01T00:00:00+00:00", host="gpu-host"
    )


def test_report_schema_and_save(tmp_path: Path) -> None:
    report = _report()
    data = json.loads(report.to_json())
    assert data["schema"] == "rigaudit.p2p/1" and data["host"] == "gpu-host" and data["taken_at"].startswith("2026")
    assert {"src", "dst", "unidir_gbps", "bidir_gbps", "staged_gbps", "limit_gbps", "data_ok"} <= set(data["pairs"][0])
    assert data["pairs"][0]["limit_gbps"] == 450.0 and report.ok
    target = tmp_path / "rigaudit" / "p2p.json"
    assert save_for_audit(report, target) is None
    assert json.loads(target.read_text())["pairs"][1]["src"] == 1
    blocker = tmp_path / "file"
    blocker.write_text("")
    warning = save_for_audit(report, blocker / "p2p.json")
    assert warning is not None and warning.startswith("could not save the result for the audit")


class _FakeNvml:
    """pynvml with two H200s on NVSwitch and one PCIe-only card."""

    NVML_NVLINK_MAX_LINKS = 18

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        self.gpus = {"0000:1b:00.0": "h200", "0000:43:00.0": "h200", "0000:81:00.0": "l40s"}

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> str:
        if bus not in self.gpus:
            raise self.NVMLError("Not Found")
        return bus

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: str) -> int:
        return 5 if self.gpus[handle] == "h200" else 4

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: str) -> int:
        return 16

    def nvmlDeviceGetNvLinkState(self, handle: str, link: int) -> int:
        if self.gpus[handle] != "h200":
            raise self.NVMLError("Not Supported")
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: str, link: int) -> Any:
        return SimpleNamespace(busId=b"00000000:05:00.0")

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: str, link: int) -> int:
        return 2


def test_read_links_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    h0, h1, l40s, missing = read_links(["0000:1b:00.0", "0000:43:00.0", "0000:81:00.0", "0000:99:00.0"], [9, 9, 8, 9])
    assert len(h0.nvlinks) == 18 and all(link.remote_kind == "switch" for link in h0.nvlinks)
    assert pair_limit(h0, h1).limit_gbps == 450.0
    assert l40s.nvlinks == [] and pair_limit(h0, l40s).limit_gbps == pytest.approx(31.5, abs=0.01)
    assert missing.error is not None and "no GPU at 0000:99:00.0" in missing.error


def test_read_links_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    (record,) = read_links(["0000:1b:00.0"], [9])
    assert record.error is not None and record.error.startswith("NVML unavailable")


def test_neither_torch_nor_cuda_bindings_is_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu, "_installed", lambda module: False)
    with pytest.raises(BenchUnavailable, match="neither torch nor NVIDIA's cuda-bindings"):
        gpu.pick_backend()
    assert main(["bench", "p2p", "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neither torch nor NVIDIA's cuda-bindings is installed" in err


def test_torch_backend_without_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(BenchUnavailable, match="torch cannot be imported"):
        p2p.measure("torch", None, size_mib=1, iters=1)


def test_gpu_selection() -> None:
    assert gpu.parse_gpu_list("0,1") == [0, 1] and gpu.parse_gpu_list(None) is None
    with pytest.raises(BenchInputError):
        gpu.parse_gpu_list("0,x")
    with pytest.raises(BenchUnavailable, match="at least 2 GPUs; 1 visible"):
        gpu.check_gpus(None, 1, at_least=2, what="the P2P benchmark")
    with pytest.raises(BenchInputError, match="GPU 3 does not exist"):
        gpu.check_gpus([0, 3], 2, at_least=2, what="the P2P benchmark")
    assert gpu.check_gpus(None, 4, at_least=2, what="x") == [0, 1, 2, 3]


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_cli_with_recorded_measurements(
    ok: bool, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu, "_installed", lambda module: module == "torch")
    monkeypatch.setattr(p2p, "measure", lambda *a, **k: _report(ok))
    out, saved = tmp_path / "p2p.json", tmp_path / "audit" / "p2p.json"
    assert main(["bench", "p2p", "--yes", "--json", str(out), "--save-to", str(saved)]) == code
    assert json.loads(out.read_text())["pairs"][0]["data_ok"] is ok
    assert saved.exists()
    text = capsys.readouterr().out
    assert "GPU0→GPU1" in text and ("CORRUPT" in text) is (not ok)


def test_cli_replay_draws_what_the_run_drew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu, "_installed", lambda module: module == "torch")
    monkeypatch.setattr(p2p, "measure", lambda *a, **k: _report(False))
    t = tmp_path / "p2p.jsonl"
    argv = ["bench", "p2p", "--yes", "--save-to", str(tmp_path / "p2p.json"), "--no-live", "--transcript", str(t)]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="CORRUPT")


def test_cli_refuses_without_approval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "_installed", lambda module: module == "torch")
    monkeypatch.setattr(p2p, "measure", lambda *a, **k: pytest.fail("ran without approval"))
    assert main(["bench", "p2p"]) == 3
