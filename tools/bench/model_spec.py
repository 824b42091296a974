"""What a model reads per decode step, from a checkpoint's config.json (and quantization config) or from numbers.

The roofline and the profile share it: the active weights per format, the KV bytes per context
token, the layers and hidden size (for the all-reduces), and for a mixture of experts how many
routed experts a step of several streams touches: with E experts and k per token, n tokens touch
E x (1 - (1 - k/E)^n) of them on average (routing taken as uniform), so a batch reads more than one
token's experts but less than n times as much.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.model_config import ModelShape, load_config, shape_from_config
from rigaudit.tools.bench.weights import FormatShare, WeightMix, quantization_of, uniform_mix, weight_mix
from rigaudit.tools.core.record import replace

MAX_TEXT = 2000


class FormatRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    format: str = Field(max_length=64)
    bytes_per_param: float = Field(gt=0, le=8)
    active_params: float = Field(ge=0, le=1e15)
    kinds: list[str] = Field(default_factory=list, max_length=16)


class ModelSpec(BaseModel):
    """One model's bytes per step: serialised into a profile so ``rigaudit explain`` can re-attribute it."""

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    formats: list[FormatRow] = Field(max_length=64)
    kv_bytes_per_token: float = Field(ge=0, le=1e12)
    """KV-cache bytes per context token, all layers."""
    layers: int | None = Field(default=None, ge=1, le=100_000)
    hidden: int | None = Field(default=None, ge=1, le=10_000_000)
    moe_layers: int = Field(default=0, ge=0, le=100_000)
    experts: int = Field(default=0, ge=0, le=1_000_000)
    top_k: int = Field(default=0, ge=0, le=1_000_000)
    expert_bytes: float = Field(default=0.0, ge=0, le=1e15)
    """One routed expert of one MoE layer."""
    source: str = Field(default="", max_length=MAX_TEXT)
    notes: list[str] = Field(default_factory=list, max_length=64)

    @property
    def active_params(self) -> float:
        return sum(f.active_params for f in self.formats)

    @property
    def active_bytes(self) -> float:
        """Weights one token reads."""
        return sum(f.active_params * f.bytes_per_param for f in self.formats)

    @property
    def bytes_per_param(self) -> float:
        return self.active_bytes / self.active_params if self.active_params > 0 else 0.0

    def experts_touched(self, streams: float) -> float:
        """Routed experts of one MoE layer read by a step of ``streams`` tokens (uniform routing)."""
        if not self.experts or not self.top_k:
            return 0.0
        n = max(1.0, streams)
        miss: float = (1.0 - min(self.top_k, self.experts) / self.experts) ** n
        return self.experts * (1.0 - miss)

    def weight_bytes(self, streams: float = 1.0) -> float:
        """Weights a decode step of ``streams`` tokens reads (one read serves them all: continuous batching)."""
        extra = self.experts_touched(streams) - min(self.top_k, self.experts) if self.experts else 0.0
        return self.active_bytes + self.moe_layers * max(0.0, extra) * self.expert_bytes

    def mix(self) -> WeightMix:
        shares = tuple(
            FormatShare(f.format, f.bytes_per_param, f.active_params, f.active_params, tuple(f.kinds)) for f in self.formats
        )
        return WeightMix(shares, 0.0, self.source, tuple(self.notes), self.expert_bytes)


def _positive(name: str, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise BenchInputError(f"{name} must be a positive number, not {value:g}")
    return value


def load_quant_config(path: Path) -> dict[str, Any]:
    """A ``hf_quant_config.json`` (``{"quantization": {...}}``) or a bare quantization config."""
    data = load_config(path)
    inner = data.get("quantization")
    return dict(inner) if isinstance(inner, dict) else data


def _given_spec(
    params_b: float | None,
    bytes_per_param: float | None,
    kv_bytes_per_token: float | None,
    kv_bytes_per_element: float | None,
    layers: int | None,
    hidden: int | None,
) -> ModelSpec:
    """The spec from numbers alone: one format for every active parameter."""
    if params_b is None or bytes_per_param is None:
        raise BenchInputError("describe the model: --config config.json, or --params-b N with --bytes-per-param B")
    mix = uniform_mix(params_b * 1e9, bytes_per_param, kv_bytes_per_element or 2.0)
    return ModelSpec(
        formats=_rows(mix),
        kv_bytes_per_token=kv_bytes_per_token or 0.0,
        layers=layers,
        hidden=hidden,
        source=f"given: {params_b:g} B active parameters at {bytes_per_param:g} bytes",
    )


def _quantization(raw: dict[str, Any], folder: Path | None, quant_config: Path | None, notes: list[str]) -> dict[str, Any] | None:
    """The quantization config named, else a checkpoint folder's ``hf_quant_config.json`` when config.json has none."""
    if quant_config is not None:
        return load_quant_config(quant_config)
    if folder is not None and quantization_of(raw) is None and (folder / "hf_quant_config.json").is_file():
        notes.append(f"quantization from {folder / 'hf_quant_config.json'}")
        return load_quant_config(folder / "hf_quant_config.json")
    return None


def _given_counts(mix: WeightMix, shape: ModelShape, bytes_per_param: float | None, params_b: float | None) -> WeightMix:
    """The config's mix with the numbers given over it: one width for every weight, and the parameter count
    (the formats keep their proportions)."""
    if bytes_per_param is not None:
        uniform = uniform_mix(shape.active_params, bytes_per_param, mix.kv_bytes_per_element)
        mix = replace(uniform, expert_bytes=shape.expert_params * bytes_per_param)
    if params_b is not None:
        scale = params_b * 1e9 / mix.active_params if mix.active_params else 1.0
        shares = tuple(replace(s, active_params=s.active_params * scale, total_params=s.total_params * scale) for s in mix.shares)
        mix = replace(mix, shares=shares, expert_bytes=mix.expert_bytes * scale)
    return mix


def model_spec(
    *,
    params_b: float | None = None,
    bytes_per_param: float | None = None,
    config: Path | None = None,
    quant_config: Path | None = None,
    kv_bytes_per_token: float | None = None,
    kv_bytes_per_element: float | None = None,
    layers: int | None = None,
    hidden: int | None = None,
) -> ModelSpec:
    """The spec from a config (and ``hf_quant_config.json`` beside it or named), numbers overriding it."""
    _positive("--params-b", params_b)
    _positive("--bytes-per-param", bytes_per_param)
    _positive("--kv-bytes-per-element", kv_bytes_per_element)
    if kv_bytes_per_token is not None and (not math.isfinite(kv_bytes_per_token) or kv_bytes_per_token < 0):
        raise BenchInputError("--kv-bytes-per-token must be a number >= 0")
    if config is None:
        return _given_spec(params_b, bytes_per_param, kv_bytes_per_token, kv_bytes_per_element, layers, hidden)
    folder = config if config.is_dir() else None
    if folder is not None:
        config = folder / "config.json"
    raw = load_config(config)
    shape = shape_from_config(raw)
    notes: list[str] = []
    quant = _quantization(raw, folder, quant_config, notes)
    mix = _given_counts(weight_mix(raw, shape, quant), shape, bytes_per_param, params_b)
    kv = (
        kv_bytes_per_token
        if kv_bytes_per_token is not None
        else shape.kv_elements_per_token * (kv_bytes_per_element or mix.kv_bytes_per_element)
    )
    label = (
        f"{config.name}: {shape.total_params / 1e9:,.2f} B parameters, {shape.active_params / 1e9:,.2f} B active per token "
        f"({'MoE' if shape.moe else 'dense'}); {mix.source}"
    )
    return ModelSpec(
        formats=_rows(mix),
        kv_bytes_per_token=kv,
        layers=layers or shape.layers,
        hidden=hidden or shape.hidden,
        moe_layers=shape.moe_layers,
        experts=shape.experts,
        top_k=shape.top_k,
        expert_bytes=mix.expert_bytes,
        source=label[:MAX_TEXT],
        notes=[*shape.notes, *mix.notes, *notes][:64],
    )


def _rows(mix: WeightMix) -> list[FormatRow]:
    return [
        FormatRow(format=s.format, bytes_per_param=s.bytes_per_param, active_params=s.active_params, kinds=list(s.kinds))
        for s in mix.shares
    ]
