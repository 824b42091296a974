"""What a profile's attribution rests on besides the measurement: the model, the layout, bandwidth and all-reduce latency.

Recorded in the profile (``rigaudit.profile/1``), so ``rigaudit explain FILE`` can re-attribute the
same measurement with corrected inputs. One decode step of a continuously batching server serves
every stream in flight: it reads the weights once (a mixture of experts: the experts its tokens
touch) and each stream's KV cache, each GPU of a tensor-parallel group its share, at the achievable
bandwidth; and it waits for the all-reduces of every layer, whose message grows with the streams.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.comm import CommTerm, NcclCurve, comm_term, message_bytes
from rigaudit.tools.bench.model_spec import ModelSpec

MAX_TEXT = 2000
ASSUMED_HIDDEN = 8192
DATASHEET_SHARE = 0.85
"""Without a measured or given bandwidth: this share of the data sheet's peak (decode kernels reach 80-92%)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class CommInputs(_Model):
    """How long one all-reduce takes: a curve measured by ``bench nccl``, a given or an assumed range."""

    world: int = Field(ge=2, le=4096)
    layers: int = Field(ge=1, le=100_000)
    per_layer: int = Field(default=2, ge=1, le=64)
    hidden: int | None = Field(default=None, ge=1, le=10_000_000)
    curve: list[tuple[int, float]] | None = Field(default=None, max_length=4096)
    """(bytes, µs), from ``bench nccl --json``."""
    latency_us: tuple[float, float] | None = None
    source: str = Field(default="", max_length=MAX_TEXT)

    def term(self, streams: float) -> CommTerm | None:
        size = message_bytes(self.hidden or ASSUMED_HIDDEN, streams)
        if self.curve:
            curve = NcclCurve(self.world, tuple(sorted(self.curve)), self.source)
            return comm_term(world=self.world, layers=self.layers, per_layer=self.per_layer, message_bytes=size, curve=curve)
        if self.latency_us is None:
            return None
        return CommTerm(self.layers, self.per_layer, self.world, size, self.latency_us, self.source)


class ProfileInputs(_Model):
    model: ModelSpec | None = None
    """None: the model was not described; streaming and communication are then not attributed."""
    tp: int = Field(default=1, ge=1, le=4096)
    """GPUs one copy of the model is split over (tensor parallel)."""
    replicas: int = Field(default=1, ge=1, le=4096)
    """Copies of the model among the serving GPUs (data parallel); streams spread evenly over them."""
    context_tokens: float = Field(default=0.0, ge=0, le=1e9)
    """Average context of a stream during decode (prompt + half the output)."""
    bandwidth_gbs: float | None = Field(default=None, gt=0, le=1e6)
    """Achievable memory bandwidth per GPU."""
    bandwidth_source: str = Field(default="", max_length=MAX_TEXT)
    comm: CommInputs | None = None
    notes: list[str] = Field(default_factory=list, max_length=64)

    def step_bytes(self, streams: float) -> float | None:
        """Bytes one GPU reads in a decode step with ``streams`` streams in flight (all replicas)."""
        if self.model is None:
            return None
        per_replica = max(1.0, streams / self.replicas)
        total = self.model.weight_bytes(per_replica) + per_replica * self.context_tokens * self.model.kv_bytes_per_token
        return total / self.tp

    def streaming_s(self, streams: float) -> float | None:
        step = self.step_bytes(streams)
        if step is None or self.bandwidth_gbs is None:
            return None
        return step / (self.bandwidth_gbs * 1e9)

    def comm_s(self, streams: float) -> tuple[float, str] | None:
        """Seconds of all-reduces per step (the middle of a range), and how they were found."""
        if self.comm is None:
            return None
        term = self.comm.term(max(1.0, streams / self.replicas))
        if term is None:
            return None
        low, high = term.seconds
        return (low + high) / 2, term.describe() + (" (the middle of the range counted)" if high > low else "")
