"""The split of a level's time per output token: each term from its inputs, the verdict, the readings, the closure."""

from __future__ import annotations

import pytest

from rigaudit.tools.bench.model_spec import FormatRow, ModelSpec
from rigaudit.tools.bench.profile_attribution import LevelLoad, Readings, Window, attribute, level_loads, readings
from rigaudit.tools.bench.profile_inputs import CommInputs, ProfileInputs
from rigaudit.tools.bench.profile_sampler import GpuInfo, GpuSample
from rigaudit.tools.bench.results import Run, Sample


def _model(gb: float, kv_bytes: float = 0.0, layers: int | None = 32, hidden: int | None = 4096) -> ModelSpec:
    return ModelSpec(
        formats=[FormatRow(format="BF16", bytes_per_param=2.0, active_params=gb * 1e9 / 2)],
        kv_bytes_per_token=kv_bytes,
        layers=layers,
        hidden=hidden,
    )


def _load(ms_per_token: float, tokens: int = 1000, in_flight: float = 1.0) -> LevelLoad:
    latency = ms_per_token * tokens / 1e3
    return LevelLoad(concurrency=1, requests=10, tokens=tokens, latency_s=latency, wall_s=latency / in_flight)


def _ms(level: object, name: str) -> float | None:
    return level.term(name).ms  # type: ignore[attr-defined]


def test_each_term_from_its_inputs_and_idle_holds_the_gap() -> None:
    # 10 ms per token; 1 GB per step at 400 GB/s = 2.5 ms; the GPU busy 40% of the time: 6 ms idle
    inputs = ProfileInputs(model=_model(1.0), bandwidth_gbs=400, bandwidth_source="given")
    level = attribute(_load(10.0), Readings(samples=50, util_pct=40.0, per_gpu_util_pct=[40.0]), inputs)
    assert level.ms_per_token == pytest.approx(10.0)
    assert _ms(level, "streaming") == pytest.approx(2.5)
    assert _ms(level, "communication") == 0.0  # one GPU per model copy
    assert _ms(level, "idle") == pytest.approx(6.0)
    assert _ms(level, "remainder") == pytest.approx(1.5)
    assert sum(t.share or 0 for t in level.terms) == pytest.approx(1.0) and level.closure == pytest.approx(1.0)
    assert level.holder == "idle" and "CUDA graphs" in level.verdict and "80% of the 7.50 ms gap" in level.verdict


def test_memory_bound_decode_says_only_fewer_bytes_or_more_bandwidth_help() -> None:
    inputs = ProfileInputs(model=_model(3.2), bandwidth_gbs=400, bandwidth_source="given")  # 8 of 10 ms
    level = attribute(_load(10.0), Readings(samples=50, util_pct=95.0, per_gpu_util_pct=[95.0]), inputs)
    assert level.holder == "streaming" and "memory-bound" in level.verdict and "speculative decoding" in level.verdict


def test_communication_is_layers_times_allreduces_times_latency() -> None:
    comm = CommInputs(world=2, layers=40, per_layer=2, hidden=4096, latency_us=(30.0, 30.0), source="given")
    inputs = ProfileInputs(model=_model(1.0), tp=2, bandwidth_gbs=500, bandwidth_source="given", comm=comm)
    level = attribute(_load(5.0), Readings(samples=50, util_pct=90.0, per_gpu_util_pct=[90.0, 90.0]), inputs)
    assert _ms(level, "streaming") == pytest.approx(1.0)  # each GPU streams half of the 1 GB
    assert _ms(level, "communication") == pytest.approx(80 * 0.030)
    assert level.holder == "communication" and "parallelism layout" in level.verdict
    # a curve measured by bench nccl: the step's message (hidden x 2 bytes x streams) looked up on it
    curve = comm.model_copy(update={"curve": [(8192, 10.0), (65536, 20.0)], "latency_us": None})
    measured = inputs.model_copy(update={"comm": curve})
    one = attribute(_load(5.0), Readings(samples=50, util_pct=90.0), measured)
    eight = attribute(_load(5.0, in_flight=8.0), Readings(samples=50, util_pct=90.0), measured)
    assert _ms(one, "communication") == pytest.approx(80 * 0.010)
    assert _ms(eight, "communication") == pytest.approx(80 * 0.020)  # 8 streams: a 64 KiB message


def test_over_explained_time_is_said_and_the_remainder_never_negative() -> None:
    inputs = ProfileInputs(model=_model(3.6), bandwidth_gbs=400, bandwidth_source="given")  # 9 ms of 10
    level = attribute(_load(10.0), Readings(samples=50, util_pct=70.0, per_gpu_util_pct=[70.0]), inputs)
    assert _ms(level, "remainder") == 0.0 and level.closure == pytest.approx(1.2)
    assert any("over-explain the measured time by 20%" in n for n in level.notes)


def test_without_a_model_or_nvml_the_remainder_holds_what_is_not_attributed() -> None:
    level = attribute(_load(10.0), Readings(samples=50, util_pct=25.0, per_gpu_util_pct=[25.0]), ProfileInputs())
    assert _ms(level, "streaming") is None and _ms(level, "idle") == pytest.approx(7.5)
    assert "streaming" in level.term("remainder").how and "not attributed: streaming" in level.verdict
    blind = attribute(_load(10.0), Readings(), ProfileInputs(model=_model(1.0), bandwidth_gbs=400))
    assert _ms(blind, "idle") is None and "not measured" in blind.term("idle").how
    assert any("only 0 sample(s)" in n for n in blind.notes)
    # with no utilisation observed, what is left is not "the GPU is busy": nothing names the kernels
    assert blind.holder == "" and "not attributed" in blind.verdict and "idle" in blind.verdict
    assert "GPU is busy" not in blind.verdict and "NVML utilisation samples" in blind.verdict


def test_a_batch_reads_the_weights_once_and_each_streams_kv() -> None:
    model = _model(1.0, kv_bytes=100_000)
    inputs = ProfileInputs(model=model, bandwidth_gbs=1000, bandwidth_source="given", context_tokens=1000)
    one = attribute(_load(10.0), Readings(samples=50, util_pct=50.0), inputs)
    eight = attribute(_load(10.0, in_flight=8.0), Readings(samples=50, util_pct=50.0), inputs)
    assert _ms(one, "streaming") == pytest.approx((1e9 + 1e8) / 1e12 * 1e3)
    assert _ms(eight, "streaming") == pytest.approx((1e9 + 8e8) / 1e12 * 1e3)  # not 8 x the weights
    # two data-parallel copies share the streams: each reads its weights once for half of them
    two = inputs.model_copy(update={"replicas": 2})
    assert _ms(attribute(_load(10.0, in_flight=8.0), Readings(samples=50, util_pct=50.0), two), "streaming") == pytest.approx(
        (1e9 + 4e8) / 1e12 * 1e3
    )


def _sample(gpu: int, t: float, util: float, **kw: float) -> GpuSample:
    return GpuSample(
        gpu=gpu,
        t=t,
        util=util,
        mem_util=util / 2,
        sm_mhz=kw.get("sm", 1980),
        power_w=300,
        **{k: v for k, v in kw.items() if k != "sm"},
    )


def test_readings_use_only_the_settled_samples_inside_the_windows() -> None:
    gpus = [GpuInfo(index=0, name="NVIDIA H200", max_sm_mhz=1980, power_limit_w=700), GpuInfo(index=1, name="NVIDIA H200")]
    windows = [Window(concurrency=1, start_s=10.0, end_s=14.0)]
    samples = [_sample(0, 10.0 + i * 0.1, 0.0 if i < 10 else 60.0) for i in range(41)]  # idle before t=11 (settling)
    samples += [_sample(0, 5.0, 100.0), _sample(0, 20.0, 100.0), _sample(2, 12.0, 100.0)]  # outside, or not serving
    samples += [_sample(1, 11.0 + i * 0.1, 30.0, nvlink_tx_kib=i * 1e6) for i in range(31)]
    r = readings(samples, windows, gpus)
    assert r.per_gpu_util_pct == [pytest.approx(60.0), pytest.approx(30.0)] and r.util_pct == pytest.approx(45.0)
    assert r.window_s == 4.0 and r.samples == 31 + 31
    # the counter grew 1e6 KiB every 0.1 s: 10.24 GB/s (counters give rates from differences, not from one reading)
    assert r.nvlink_tx_gbs == pytest.approx(1e6 * 1024 / 0.1 / 1e9, rel=0.01)
    level = attribute(_load(10.0), r, ProfileInputs(model=_model(1.0), bandwidth_gbs=400, bandwidth_source="given"))
    assert any("utilisation differs across GPUs" in n for n in level.notes)


def test_signals_clocks_power_and_pcie() -> None:
    r = Readings(
        samples=50, util_pct=80.0, per_gpu_util_pct=[80.0], sm_mhz=1200, max_sm_mhz=1980, power_w=690, power_limit_w=700,
        pcie_tx_gbs=3.0, pcie_rx_gbs=1.0,
    )  # fmt: skip
    notes = attribute(_load(10.0), r, ProfileInputs()).notes
    assert any("SM clock 1,200 of 1,980 MHz" in n for n in notes)
    assert any("at its 700 W limit" in n for n in notes)
    assert any("4.0 GB/s over PCIe" in n for n in notes)


def test_level_loads_pool_repeats_and_count_streams_by_littles_law() -> None:
    def run(concurrency: int, repeat: int, latency_ms: float, duration: float) -> Run:
        samples = [Sample(ttft_ms=5.0, itl_ms=[1.0] * 9, output_tokens=10, latency_ms=latency_ms) for _ in range(4)]
        samples.append(Sample(ok=False, error="HTTP 500"))
        return Run(concurrency=concurrency, repeat=repeat, output_tokens_per_s=1.0, duration_s=duration, samples=samples)

    loads = level_loads([run(1, 0, 100.0, 0.4), run(1, 1, 100.0, 0.4), run(4, 0, 200.0, 0.2)])
    assert [lv.concurrency for lv in loads] == [1, 4]
    single, four = loads
    assert single.requests == 8 and single.tokens == 80 and single.latency_s == pytest.approx(0.8) and single.wall_s == 0.8
    assert four.latency_s / four.wall_s == pytest.approx(4.0)  # four in flight on average
    assert single.tpot_ms_median == pytest.approx((100.0 - 5.0) / 9)
