"""Bytes read per token, per weight format: which parts of a checkpoint are quantized, from its quantization config.

A quantized checkpoint is rarely quantized throughout: an NVFP4 export (ModelOpt, compressed-tensors)
usually keeps attention, the LM head, routers and often the shared experts in BF16, and the
embedding is never quantized. One bytes-per-parameter figure for every active weight misstates the
bytes per token by up to 2x (a story's 1.16 bytes per active parameter is NVFP4 experts with about
42% of the active weights in BF16). This module assigns each group of weights
(:class:`~rigaudit.tools.bench.model_config.Component`) its format from the config's lists:

- ModelOpt (``quant_method: modelopt`` or ``hf_quant_config.json``): ``quant_algo`` for every linear
  layer except ``exclude_modules`` / ``ignore`` (globs);
- compressed-tensors: each ``config_groups`` entry's ``targets`` (``Linear`` or ``re:`` patterns) and
  ``weights`` (bits, type, group size), except ``ignore``;
- FP8, GPTQ, AWQ, AutoRound, MXFP4, bitsandbytes: every linear layer but the LM head and the routers,
  except ``modules_to_not_convert`` / ``llm_int8_skip_modules``.
Everything else is in the checkpoint's dtype (``torch_dtype``). Scale overheads are counted (an FP8
scale per 16 NVFP4 values: 0.5625 bytes; a BF16 scale per group of 128 INT4 values: 0.516 bytes).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from typing import Any

from rigaudit.tools.bench.model_config import Component, ModelShape
from rigaudit.tools.core.record import Record

LINEAR = frozenset({"lm_head", "attn", "mlp", "experts", "shared", "router"})
_DTYPES = {"bfloat16": ("BF16", 2.0), "float16": ("FP16", 2.0), "float32": ("FP32", 4.0), "float8_e4m3fn": ("FP8", 1.0)}
_MAX_ENTRIES = 10_000


class Format(Record):
    name: str
    bytes_per_param: float


class FormatShare(Record):
    """The active weights of one format."""

    format: str
    bytes_per_param: float
    active_params: float
    total_params: float
    kinds: tuple[str, ...]

    @property
    def active_bytes(self) -> float:
        return self.active_params * self.bytes_per_param


class WeightMix(Record):
    """Active weights per format, the KV element size, and what they rest on."""

    shares: tuple[FormatShare, ...]
    kv_bytes_per_element: float
    source: str
    notes: tuple[str, ...] = ()
    expert_bytes: float = 0.0
    """One routed expert of one MoE layer, bytes (to count the experts a batch touches)."""

    @property
    def active_params(self) -> float:
        return sum(s.active_params for s in self.shares)

    @property
    def active_bytes(self) -> float:
        return sum(s.active_bytes for s in self.shares)

    @property
    def bytes_per_param(self) -> float:
        """The effective width: active bytes / active parameters."""
        return self.active_bytes / self.active_params if self.active_params > 0 else 0.0

    def fraction(self, fmt: str) -> float:
        """The share of active parameters in format ``fmt``."""
        total = self.active_params
        return sum(s.active_params for s in self.shares if s.format == fmt) / total if total > 0 else 0.0


def uniform_mix(
    active_params: float, bytes_per_param: float, kv_bytes_per_element: float = 2.0, source: str = "given"
) -> WeightMix:
    """Every active weight at one width (``--params-b`` with ``--bytes-per-param``)."""
    share = FormatShare(f"{bytes_per_param:g} B/param", bytes_per_param, active_params, active_params, ())
    return WeightMix((share,), kv_bytes_per_element, source)


# --- matching module names ----------------------------------------------------------------------


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def matches(name: str, entry: str) -> bool:
    """Does a list entry name this module: ``re:REGEX`` (anchored at the start), a glob, or a dotted name or segment?"""
    if entry.startswith("re:"):
        try:
            return re.match(entry[3:], name) is not None
        except re.error:
            return False
    if any(ch in entry for ch in "*?["):
        return any(fnmatch.fnmatchcase(prefix, entry) for prefix in _prefixes(name))
    return name == entry or name.startswith(entry + ".") or f".{entry}." in f".{name}."


def _entries(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value[:_MAX_ENTRIES] if isinstance(v, str)]
    return []


def _excluded(component: Component, entries: Sequence[str]) -> bool:
    return any(matches(component.module, entry) for entry in entries)


# --- formats ------------------------------------------------------------------------------------


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def algo_format(algo: str, group: int | None = None) -> Format | None:
    """A ModelOpt ``quant_algo`` (``NVFP4``, ``FP8``, ``W4A8_AWQ``, ``INT8_SQ``...) as a weight format."""
    name = algo.upper()
    if "NVFP4" in name or name == "FP4":
        return Format("NVFP4", 0.5 + 1 / 16)
    if "MXFP4" in name:
        return Format("MXFP4", 0.5 + 1 / 32)
    if "MXFP8" in name:
        return Format("MXFP8", 1.0 + 1 / 32)
    if "INT4" in name or name.startswith("W4A"):
        g = group or 128
        return Format(f"INT4 g{g}", 0.5 + 2 / g)
    if "FP8" in name:
        return Format("FP8", 1.0)
    if "INT8" in name or name.startswith("W8A"):
        return Format("INT8", 1.0)
    return None


def _bits_format(bits: int, kind: str, group: int | None) -> Format:
    """``bits`` per value plus a scale per group (FP8 scales for float formats, BF16 for integers)."""
    if kind == "float" and bits == 4 and group == 16:
        return Format("NVFP4", 0.5 + 1 / 16)
    if kind == "float" and bits == 4 and group == 32:
        return Format("MXFP4", 0.5 + 1 / 32)
    scale = (1.0 if kind == "float" else 2.0) / group if group else 0.0
    label = f"{'FP' if kind == 'float' else 'INT'}{bits}" + (f" g{group}" if group else "")
    return Format(label, bits / 8 + scale)


Rule = Callable[[Component], Format | None]
"""A component's quantized format, or None for the checkpoint's dtype."""


def _modelopt(quant: dict[str, Any]) -> tuple[Rule, str] | None:
    algo = str(quant.get("quant_algo") or "")
    fmt = algo_format(algo, _int(quant.get("group_size"), 0) or None)
    if fmt is None:
        return None
    entries = _entries(quant.get("exclude_modules")) + _entries(quant.get("ignore"))

    def rule(c: Component) -> Format | None:
        return fmt if c.kind in LINEAR and not _excluded(c, entries) else None

    return rule, f"ModelOpt {algo}, {len(entries)} excluded module pattern(s)"


def _ct_target(component: Component, target: str) -> bool:
    if target == "Linear":
        return component.kind in LINEAR
    return matches(component.module, target)


def _compressed_tensors(quant: dict[str, Any]) -> tuple[Rule, str] | None:
    groups = quant.get("config_groups")
    if not isinstance(groups, dict):
        return None
    schemes: list[tuple[list[str], Format]] = []
    for group in list(groups.values())[:_MAX_ENTRIES]:
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            continue
        bits = _int(weights.get("num_bits"), 0)
        if not bits:
            continue
        strategy = str(weights.get("strategy") or "")
        size = _int(weights.get("group_size"), 0) if strategy in ("group", "tensor_group", "") else 0
        schemes.append((_entries(group.get("targets")), _bits_format(bits, str(weights.get("type") or "int"), size or None)))
    if not schemes:
        return None
    ignore = _entries(quant.get("ignore"))

    def rule(c: Component) -> Format | None:
        if c.kind == "embed" or _excluded(c, ignore):
            return None
        for targets, fmt in schemes:
            if any(_ct_target(c, t) for t in targets):
                return fmt
        return None

    names = ", ".join(sorted({fmt.name for _, fmt in schemes}))
    return rule, f"compressed-tensors {names}, {len(ignore)} ignored module pattern(s)"


def _linear_but_head(fmt: Format, entries: list[str], head: bool = False) -> Rule:
    def rule(c: Component) -> Format | None:
        if c.kind not in LINEAR or c.kind == "router" or (c.kind == "lm_head" and not head):
            return None
        return None if _excluded(c, entries) else fmt

    return rule


def _simple(quant: dict[str, Any], method: str) -> tuple[Rule, str] | None:
    skip = _entries(quant.get("modules_to_not_convert")) + _entries(quant.get("llm_int8_skip_modules"))
    if method in ("fp8", "fbgemm_fp8", "finegrained_fp8"):
        return _linear_but_head(Format("FP8", 1.0), skip), f"{method}: FP8 linear layers"
    if method == "mxfp4":
        return _linear_but_head(Format("MXFP4", 0.5 + 1 / 32), skip), "MXFP4 linear layers"
    if method == "bitsandbytes":
        if quant.get("load_in_8bit"):
            return _linear_but_head(Format("INT8", 1.0), skip), "bitsandbytes 8-bit"
        double = bool(quant.get("bnb_4bit_use_double_quant"))
        fmt = Format("NF4", 0.5 + (1 / 64 if double else 4 / 64))
        return _linear_but_head(fmt, skip), "bitsandbytes 4-bit" + (", double quantization" if double else "")
    bits = _int(quant.get("bits") or quant.get("w_bit"), 0)
    if bits and method in ("gptq", "awq", "auto-round", "autoround", "gptqmodel", "hqq", "quark"):
        group = quant.get("group_size") or quant.get("q_group_size")
        size = _int(group, 0) or None
        fmt = Format(f"INT{bits}" + (f" g{size}" if size else ""), bits / 8 + (2.0 / size if size else 0.0))
        return _linear_but_head(fmt, skip, head=bool(quant.get("lm_head"))), f"{method} {fmt.name}"
    return None


def _rule(quant: dict[str, Any]) -> tuple[Rule, str] | None:
    method = str(quant.get("quant_method") or "").lower()
    if method == "modelopt" or ("quant_algo" in quant and method in ("", "modelopt")):
        return _modelopt(quant)
    if method == "compressed-tensors":
        return _compressed_tensors(quant)
    return _simple(quant, method)


def _kv_bytes(quant: dict[str, Any] | None, base: float) -> tuple[float, str]:
    if quant:
        algo = quant.get("kv_cache_quant_algo")
        if isinstance(algo, str) and (fmt := algo_format(algo)) is not None:
            return fmt.bytes_per_param, f"KV cache {fmt.name} (kv_cache_quant_algo)"
        scheme = quant.get("kv_cache_scheme")
        if isinstance(scheme, dict) and (bits := _int(scheme.get("num_bits"), 0)):
            return bits / 8, f"KV cache {bits}-bit (kv_cache_scheme)"
    return base, "KV cache in the checkpoint's dtype (a server's --kv-cache-dtype may differ)"


def _dtype(config: dict[str, Any]) -> tuple[Format, str | None]:
    nested = [config.get(k) for k in ("text_config", "llm_config", "language_config")]
    for cfg in (config, *[n for n in nested if isinstance(n, dict)]):
        value = str(cfg.get("torch_dtype") or cfg.get("dtype") or "").lower().removeprefix("torch.")
        if value in _DTYPES:
            name, size = _DTYPES[value]
            return Format(name, size), None
    return Format("BF16", 2.0), "the config names no dtype: BF16 assumed for unquantized weights"


def quantization_of(config: dict[str, Any]) -> dict[str, Any] | None:
    """The config's ``quantization_config`` (or a ``hf_quant_config.json``'s ``quantization``), if any."""
    for key in ("quantization_config", "quantization"):
        quant = config.get(key)
        if isinstance(quant, dict):
            return quant
    nested = config.get("text_config")
    if isinstance(nested, dict) and isinstance(nested.get("quantization_config"), dict):
        return dict(nested["quantization_config"])
    return None


def weight_mix(config: dict[str, Any], shape: ModelShape, quant: dict[str, Any] | None = None) -> WeightMix:
    """Each active weight's format, from ``quant`` (else the config's own quantization config) and the dtype."""
    base, dtype_note = _dtype(config)
    notes = [dtype_note] if dtype_note else []
    quant = quant if quant is not None else quantization_of(config)
    found = _rule(quant) if quant else None
    if quant and found is None:
        method = quant.get("quant_method") or quant.get("quant_algo") or "?"
        notes.append(f"quantization {method!r} not understood: every weight counted in {base.name}")
    rule, source = found if found else ((lambda c: None), f"{base.name} throughout (no quantization config)")
    groups: dict[str, tuple[Format, float, float, set[str]]] = {}
    expert_bytes: list[float] = []
    for component in shape.components:
        fmt = rule(component) or base
        _, active, total, kinds = groups.get(fmt.name, (fmt, 0.0, 0.0, set()))
        groups[fmt.name] = (fmt, active + component.active, total + component.total, kinds | {component.kind})
        if component.kind == "experts":
            expert_bytes.append(shape.expert_params * fmt.bytes_per_param)
    shares = tuple(
        FormatShare(fmt.name, fmt.bytes_per_param, active, total, tuple(sorted(kinds)))
        for fmt, active, total, kinds in sorted(groups.values(), key=lambda g: -g[1])
    )
    kv, kv_note = _kv_bytes(quant, base.bytes_per_param)
    notes.append(kv_note)
    mean_expert = sum(expert_bytes) / len(expert_bytes) if expert_bytes else 0.0
    return WeightMix(shares, kv, source, tuple(notes), mean_expert)
