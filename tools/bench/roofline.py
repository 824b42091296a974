"""The single-stream decode roofline: tokens/s <= aggregate memory bandwidth / bytes read per token.

Each decoded token reads every active weight once (active parameters x bytes per parameter) and the
KV cache of the context so far (KV bytes per token x context). Divide the GPUs' aggregate memory
bandwidth by that and you have an upper bound no system fix can beat; measured / bound is the
efficiency that says whether a system fix could matter at all.
"""

from __future__ import annotations

from dataclasses import dataclass

GPU_BANDWIDTH_GBS: dict[str, float] = {
    "H100 SXM": 3350.0,
    "H100 PCIe": 2000.0,
    "H100 NVL": 3900.0,
    "H200": 4800.0,
    "H20": 4000.0,
    "GH200": 4000.0,
    "B200": 8000.0,
    "B300": 8000.0,
    "GB200": 8000.0,
    "A100 80GB": 2039.0,
    "A100 40GB": 1555.0,
    "A10": 600.0,
    "L40S": 864.0,
    "L40": 864.0,
    "L4": 300.0,
    "RTX PRO 6000 Blackwell": 1792.0,
    "RTX 6000 Ada": 960.0,
    "RTX 5090": 1792.0,
    "RTX 4090": 1008.0,
    "RTX 3090": 936.0,
    "MI300X": 5300.0,
    "MI325X": 6000.0,
}
"""Peak memory bandwidth per GPU, GB/s (vendor data sheets)."""


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def lookup_bandwidth(name: str) -> tuple[str, float] | None:
    """A GPU model name (``H200``, ``NVIDIA H100 80GB HBM3``, ``rtx pro 6000``) → (table name, GB/s)."""
    wanted = _norm(name.replace("NVIDIA", "").replace("nvidia", ""))
    if not wanted:
        return None
    for key, value in GPU_BANDWIDTH_GBS.items():
        if _norm(key) == wanted:
            return key, value
    # the longest table name contained in the given one (``H100 80GB HBM3`` → none; ``H100 SXM5`` → H100 SXM)
    hits = [key for key in GPU_BANDWIDTH_GBS if _norm(key) in wanted or wanted in _norm(key)]
    if not hits:
        if "h100" in wanted:  # a bare "H100 80GB HBM3" is the SXM part
            return "H100 SXM", GPU_BANDWIDTH_GBS["H100 SXM"]
        return None
    best = max(hits, key=lambda key: (_norm(key) in wanted, len(key)))
    return best, GPU_BANDWIDTH_GBS[best]


@dataclass(frozen=True)
class Roofline:
    active_params: float
    bytes_per_param: float
    kv_bytes_per_token: float
    context: int
    gpus: int
    bandwidth_gbs: float
    """Per GPU."""
    bandwidth_source: str
    measured_tok_s: float | None = None

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

    @property
    def bound_tok_s(self) -> float:
        return self.aggregate_gbs * 1e9 / self.bytes_per_token if self.bytes_per_token > 0 else float("inf")

    @property
    def efficiency(self) -> float | None:
        return self.measured_tok_s / self.bound_tok_s if self.measured_tok_s is not None and self.bound_tok_s > 0 else None

    def verdict(self) -> str | None:
        """What the efficiency means for someone hunting a system fix."""
        eff = self.efficiency
        if eff is None:
            return None
        if eff > 1.05:
            return (
                "above the bound: the inputs are off (fewer active parameters or bytes per parameter than given, "
                "speculative decoding, or batching counted as one stream)"
            )
        if eff >= 0.5:
            return (
                "near the bound: decode is memory-bound and efficient; only fewer bytes per token "
                "(quantization, MoE) or more bandwidth helps"
            )
        if eff >= 0.2:
            return "well below the bound: kernels, communication or scheduling leave bandwidth unused; system fixes can matter"
        return (
            "far below the bound: no system setting (PCIe, NUMA, clocks) explains a gap this size; look at the serving "
            "software (unsupported kernels falling back, a fallback path for the quantization format, eager mode, "
            "synchronous communication) before tuning the host"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": "rigaudit.roofline/1",
            "active_params": self.active_params,
            "bytes_per_param": self.bytes_per_param,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "context": self.context,
            "gpus": self.gpus,
            "bandwidth_gbs_per_gpu": self.bandwidth_gbs,
            "bandwidth_source": self.bandwidth_source,
            "bytes_per_token": self.bytes_per_token,
            "bound_tok_s": self.bound_tok_s,
            "measured_tok_s": self.measured_tok_s,
            "efficiency": self.efficiency,
        }
