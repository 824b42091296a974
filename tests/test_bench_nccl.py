"""NCCL all-reduce: nccl-tests' table, NCCL's INFO transport lines, bus bandwidth, and a fake all_reduce_perf."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench import nccl
from rigaudit.tools.bench._nccl_worker import worker_env
from rigaudit.tools.bench.errors import BenchInputError, BenchUnavailable
from rigaudit.tools.bench.nccl_parse import bus_factor, human_size, parse_nccl_tests, parse_size, parse_sizes, parse_transports
from tests.support.replay import live_then_replayed, same

NCCL_TESTS_NEW = """\
# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1
#
# Using devices
#  Rank  0 Group  0 Pid  41234 on   gpu-host device  0 [0x1b] NVIDIA H200
#  Rank  1 Group  0 Pid  41234 on   gpu-host device  1 [0x43] NVIDIA H200
gpu-host:41234:41234 [0] NCCL INFO NCCL version 2.27.3+cuda12.9
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    14.92   70.28   70.28      0    14.51   72.27   72.27      0
    16777216       4194304     float     sum      -1    68.45  245.10  245.10      0    67.90  247.09  247.09      0
  1073741824     268435456     float     sum      -1   2864.7  374.82  374.82      0   2859.1  375.55  375.55      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 230.8
"""

NCCL_TESTS_OLD = """\
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608       2097152     float     sum    411.3   20.40   35.70    N/A    409.8   20.47   35.82    N/A
"""

NCCL_INFO = """\
gpu-host:41234:41301 [0] NCCL INFO NCCL version 2.27.3+cuda12.9
gpu-host:41234:41301 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.
gpu-host:41234:41301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
gpu-host:41234:41301 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
gpu-host:41235:41302 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read
gpu-host:41235:41302 [1] NCCL INFO Channel 01 : 1[43000] -> 0[1b000] via P2P/IPC
gpu-host:41234:41301 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
"""

PCIE_INFO = """\
node:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
node:1:2 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
node:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0
node:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct
"""


def test_parse_nccl_tests_table() -> None:
    rows = parse_nccl_tests(NCCL_TESTS_NEW)
    assert [r.size for r in rows] == [2**20, 2**24, 2**30]
    big = rows[-1]
    assert (big.time_us, big.algbw_gbps, big.busbw_gbps, big.wrong) == (2864.7, 374.82, 374.82, 0)
    assert big.inplace_busbw_gbps == 375.55 and big.dtype == "float"
    (old,) = parse_nccl_tests(NCCL_TESTS_OLD)  # no root column; validation off
    assert (old.size, old.busbw_gbps, old.wrong, old.inplace_time_us) == (8388608, 35.70, None, 409.8)
    assert parse_nccl_tests("# only comments\nNCCL INFO x\n") == []


def test_parse_transports() -> None:
    nvlink = parse_transports(NCCL_INFO.splitlines())
    assert nvlink.counts == {"P2P/CUMEM/read": 3, "P2P/IPC": 1}
    assert nvlink.main == "P2P" and nvlink.version == "2.27.3+cuda12.9"
    assert nvlink.summary().startswith("P2P/CUMEM/read x3")
    pcie = parse_transports(PCIE_INFO.splitlines())
    assert pcie.counts == {"SHM/direct/direct": 2, "NET/IB/0/GDRDMA": 1, "NET/Socket/0": 1}
    assert pcie.main in ("SHM", "NET")
    assert parse_transports(["no nccl here"]).main is None


def test_sizes_and_bus_bandwidth() -> None:
    assert parse_sizes("1M,16M,256M,1G") == [2**20, 2**24, 2**28, 2**30]
    assert parse_size("16MiB") == 2**24 and parse_size("4096") == 4096 and parse_size("0.5G") == 2**29
    for bad in ("", "1X", "-1M", "0"):
        with pytest.raises(BenchInputError):
            parse_size(bad)
    assert [human_size(s) for s in (2**20, 2**30, 3000)] == ["1M", "1G", "3000B"]
    assert bus_factor(2) == 1.0 and bus_factor(8) == 1.75
    row = nccl.row_from_time(2**30, 2.8647e-3, 8, True)
    assert row.algbw_gbps == pytest.approx(374.8, abs=0.1) and row.busbw_gbps == pytest.approx(374.8 * 1.75, abs=0.2)


def test_workers_never_allow_nvls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    env = worker_env("/tmp/x", 29500, 2, 1)
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NCCL_DEBUG"] == "INFO"
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["RANK"] == "1" and env["NCCL_DEBUG_FILE"].startswith("/tmp/x/")


def test_no_torch_no_nccl_tests_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(BenchUnavailable, match="torch is not installed"):
        nccl.run_allreduce("auto", None, [2**20], iters=1, warmup=0)
    assert main(["bench", "nccl", "--yes"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch is not installed" in err


def _fake_all_reduce_perf(tmp_path: Path) -> Path:
    """An all_reduce_perf that prints a table for its -b size, and fails unless NVLS is off."""
    script = tmp_path / "bin" / "all_reduce_perf"
    script.parent.mkdir()
    script.write_text(f"""#!{sys.executable}
import os, sys
if os.environ.get("NCCL_NVLS_ENABLE") != "0":
    print("NVLS must be off"); sys.exit(9)
size = int(sys.argv[sys.argv.index("-b") + 1])
print({NCCL_INFO!r})
print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
t = size / 300e3
print(f"  {{size}}  {{size // 4}}  float  sum  -1  {{t:.2f}}  300.00  300.00  0  {{t:.2f}}  301.00  301.00  0")
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script.parent


def test_nccl_tests_backend_with_a_fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(_fake_all_reduce_perf(tmp_path)) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the benchmark overrides it
    seen: list[tuple[str, int, int]] = []
    report = nccl.run_allreduce("auto", 2, [2**20, 2**30], iters=5, warmup=1, progress=lambda *a: seen.append(a))
    assert report.tool == "nccl-tests all_reduce_perf" and report.world_size == 2
    assert [r.bytes for r in report.rows] == [2**20, 2**30] and all(r.busbw_gbps == 300.0 and r.data_ok for r in report.rows)
    assert report.transport == "P2P" and report.transports["P2P/CUMEM/read"] == 6  # both runs' logs
    assert report.env["NCCL_NVLS_ENABLE"] == "0"
    assert seen == [("1M", 1, 2), ("1G", 2, 2)]


def test_cli_nccl_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(_fake_all_reduce_perf(tmp_path)) + os.pathsep + os.environ.get("PATH", ""))
    out = tmp_path / "nccl.json"
    assert main(["bench", "nccl", "--tool", "nccl-tests", "--gpus", "2", "--sizes", "1M,16M", "--yes", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.nccl/1" and data["transport"] == "P2P" and len(data["rows"]) == 2
    assert "transport: P2P" in capsys.readouterr().out
    assert main(["bench", "nccl", "--tool", "nccl-tests", "--gpus", "2"]) == 3  # no terminal, no --yes
    t = tmp_path / "nccl.jsonl"
    argv = [
        "bench",
        "nccl",
        "--tool",
        "nccl-tests",
        "--gpus",
        "2",
        "--sizes",
        "1M,16M",
        "--yes",
        "--no-live",
        "--transcript",
        str(t),
    ]
    live, replayed = live_then_replayed(capsys, lambda: main(argv), t)
    same(live, replayed, expect="transport: P2P")  # the table and the plot, drawn again from the transcript
