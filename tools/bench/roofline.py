"""The single-stream decode roofline: the most tokens/s any system can give one request, as a range.

Each decoded token reads every active weight once (per weight format: :mod:`rigaudit.tools.bench.weights`)
and the KV cache of its context, spread over the GPUs the model is split over; under tensor
parallelism it also waits for two all-reduces per layer (:mod:`rigaudit.tools.bench.comm`). So

    time per token >= bytes per token / (GPUs x achievable bandwidth) + layers x all-reduces x latency

The bound is a range: its high end takes the data sheet's peak bandwidth (or the one given or
measured) and the low end of the all-reduce latency; its low end the bandwidth a good decode kernel
achieves (80% of a data-sheet peak) and the high end of the latency. ``assumptions()`` says what
it rests on. measured / bound is the efficiency that says whether a system fix could matter at all.
"""

from __future__ import annotations

from rigaudit.tools.bench.comm import CommTerm
from rigaudit.tools.bench.gpu_specs import SPECS, lookup
from rigaudit.tools.bench.weights import WeightMix
from rigaudit.tools.core.record import Record

PEAK_ACHIEVABLE = (0.80, 1.0)
"""The share of a data-sheet peak a decode kernel streams weights at: 80% (the low end of the bound) to
100% (no system exceeds the peak). A device-to-device copy on an H200 measured 89% (docs/validation)."""

GPU_BANDWIDTH_GBS: dict[str, float] = {spec.name: spec.bandwidth_gbs for spec in SPECS}
"""Peak memory bandwidth per GPU, GB/s, by NVML name (data sheets; see :mod:`rigaudit.tools.bench.gpu_specs`)."""


def lookup_bandwidth(name: str) -> tuple[str, float] | None:
    """A GPU name, exactly as NVML reports it or one of its aliases → (NVML name, GB/s); None otherwise."""
    spec = lookup(name)
    return (spec.name, spec.bandwidth_gbs) if spec is not None else None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


class Roofline(Record):
    active_params: float
    bytes_per_param: float
    """Effective: active bytes / active parameters."""
    kv_bytes_per_token: float
    context: int
    gpus: int
    bandwidth_gbs: float
    """Per GPU."""
    bandwidth_source: str
    measured_tok_s: float | None = None
    achievable: tuple[float, float] = (1.0, 1.0)
    """The share of ``bandwidth_gbs`` decode reaches: (low end, high end); (1, 1) when measured or given."""
    comm: CommTerm | None = None
    weights: WeightMix | None = None
    notes: tuple[str, ...] = ()
    """Further assumptions (from the config), said with the bound."""

    @property
    def weight_bytes(self) -> float:
        return self.active_params * self.bytes_per_param

    @property
    def kv_bytes(self) -> float:
        return self.kv_bytes_per_token * self.context

    @property
    def bytes_per_token(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def aggregate_gbs(self) -> float:
        return self.bandwidth_gbs * self.gpus

    def memory_seconds(self, fraction: float = 1.0) -> float:
        """Streaming one token's bytes at ``fraction`` of the bandwidth."""
        rate = self.aggregate_gbs * 1e9 * fraction
        return self.bytes_per_token / rate if rate > 0 else float("inf")

    @property
    def comm_seconds(self) -> tuple[float, float]:
        return self.comm.seconds if self.comm is not None else (0.0, 0.0)

    @property
    def bound_range(self) -> tuple[float, float]:
        """(low, high) tok/s: conservative bandwidth and slow all-reduces, peak bandwidth and fast ones."""
        low_f, high_f = self.achievable
        slow = self.memory_seconds(low_f) + self.comm_seconds[1]
        fast = self.memory_seconds(high_f) + self.comm_seconds[0]
        return (1.0 / slow if slow > 0 else float("inf"), 1.0 / fast if fast > 0 else float("inf"))

    @property
    def bound_tok_s(self) -> float:
        """The high end: no system decodes one stream faster."""
        return self.bound_range[1]

    @property
    def memory_bound_tok_s(self) -> float:
        """Bandwidth alone, at its high end (no communication)."""
        seconds = self.memory_seconds(self.achievable[1])
        return 1.0 / seconds if seconds > 0 else float("inf")

    @property
    def efficiency(self) -> float | None:
        """measured / the high end of the bound."""
        return self.measured_tok_s / self.bound_tok_s if self.measured_tok_s is not None and self.bound_tok_s > 0 else None

    @property
    def efficiency_range(self) -> tuple[float, float] | None:
        if self.measured_tok_s is None:
            return None
        low, high = self.bound_range
        return self.measured_tok_s / high, self.measured_tok_s / low

    def comm_dominates(self) -> bool:
        return self.comm_seconds[0] > self.memory_seconds(self.achievable[1])

    def verdict(self) -> str | None:
        """What the efficiency means for someone hunting a system fix (judged against the bound's low end)."""
        found = self.efficiency_range
        if found is None:
            return None
        pessimistic, optimistic = found
        if pessimistic > 1.05:
            text = (
                "above the bound: the inputs are off (fewer active parameters or bytes per parameter than given, "
                "speculative decoding, or batching counted as one stream)"
            )
        elif optimistic >= 0.5:
            text = (
                "near the bound: decode is memory-bound and efficient; only fewer bytes per token "
                "(quantization, MoE) or more bandwidth helps"
            )
        elif optimistic >= 0.2:
            text = "well below the bound: kernels, communication or scheduling leave bandwidth unused; system fixes can matter"
        else:
            text = (
                "far below the bound: no system setting (PCIe, NUMA, clocks) explains a gap this size; look at the serving "
                "software (unsupported kernels falling back, a fallback path for the quantization format, eager mode, "
                "synchronous communication) before tuning the host"
            )
        if self.comm_dominates():
            low, _ = self.comm_seconds
            text += (
                f"; communication dominates the bound ({_ms(low)} of all-reduces per token against "
                f"{_ms(self.memory_seconds(self.achievable[1]))} of streaming): a layout with fewer or faster all-reduces "
                "(fewer tensor-parallel GPUs, NVLink, expert or pipeline parallelism) moves it most"
            )
        return text

    def assumptions(self) -> list[str]:
        """What the bound rests on, one statement each."""
        out = []
        if self.weights is not None and len(self.weights.shares) > 1:
            parts = ", ".join(
                f"{s.format} {s.active_params / 1e9:,.2f} B ({self.weights.fraction(s.format):.0%})" for s in self.weights.shares
            )
            out.append(f"each token reads every active weight once: {parts} ({self.weights.source})")
        else:
            out.append(f"each token reads every active weight once at {self.bytes_per_param:g} bytes per parameter")
        out.append(f"and the KV cache of {self.context:,} context tokens" if self.context else "no KV cache read (--context 0)")
        low_f, high_f = self.achievable
        share = f"{low_f:.0%}-{high_f:.0%} of it achieved" if low_f != high_f else "all of it achieved"
        out.append(f"memory bandwidth {self.gpus} x {self.bandwidth_gbs:,.0f} GB/s ({self.bandwidth_source}), {share}")
        if self.gpus > 1:
            out.append("the weights split evenly over the GPUs (tensor parallel), each GPU streaming its share at once")
        if self.comm is not None:
            out.append(f"communication: {self.comm.describe()}")
        elif self.gpus > 1:
            out.append("communication not counted: give --layers (or --config) to add the all-reduces of each layer")
        out.append("one stream, decode only: no batching, no speculative decoding, prefill excluded")
        return [*out, *self.notes]

    def to_dict(self) -> dict[str, object]:
        low, high = self.bound_range
        comm = self.comm
        return {
            "schema": "rigaudit.roofline/1",
            "active_params": self.active_params,
            "bytes_per_param": self.bytes_per_param,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "context": self.context,
            "gpus": self.gpus,
            "bandwidth_gbs_per_gpu": self.bandwidth_gbs,
            "bandwidth_source": self.bandwidth_source,
            "achievable_fraction": list(self.achievable),
            "bytes_per_token": self.bytes_per_token,
            "bound_tok_s": high,
            "bound_tok_s_range": [low, high],
            "memory_bound_tok_s": self.memory_bound_tok_s,
            "communication": None
            if comm is None
            else {
                "layers": comm.layers,
                "all_reduces_per_layer": comm.per_layer,
                "gpus": comm.world,
                "message_bytes": comm.message_bytes,
                "latency_us": list(comm.latency_us),
                "seconds_per_token": list(comm.seconds),
                "source": comm.source,
            },
            "weights": None
            if self.weights is None
            else [
                {
                    "format": s.format,
                    "bytes_per_param": s.bytes_per_param,
                    "active_params": s.active_params,
                    "kinds": list(s.kinds),
                }
                for s in self.weights.shares
            ],
            "measured_tok_s": self.measured_tok_s,
            "efficiency": self.efficiency,
            "assumptions": self.assumptions(),
        }
