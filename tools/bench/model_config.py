"""Approximate parameter counts of a Hugging Face ``config.json``: total, active per token, KV per token.

Dense and mixture-of-experts decoders (Llama, Qwen, Mistral/Mixtral, DeepSeek/GLM with MLA and
shared experts). Approximate by design: norms, biases and the input embedding lookup are left
out of the active count (the LM head is in: it is read for every token), gated MLPs are assumed,
and exotic attention (sliding windows, linear attention, sparse indexers) is counted as full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.core.record import Record, field

MAX_CONFIG_BYTES = 16 * 1024 * 1024
Kind = Literal["embed", "lm_head", "attn", "mlp", "experts", "shared", "router"]


class Component(Record):
    """One group of weights: its kind, its layer (None for the embedding and the LM head) and its size."""

    kind: Kind
    layer: int | None
    total: float
    """Parameters stored."""
    active: float
    """Parameters read for one token (the routed experts: top-k of them)."""
    module: str
    """A representative module name (Hugging Face naming), matched against a quantization config's lists."""


class ModelShape(Record):
    total_params: float
    active_params: float
    kv_elements_per_token: float
    """KV-cache elements stored per context token over all layers (multiply by the KV dtype's bytes)."""
    moe: bool
    notes: list[str] = field(default_factory=list)
    components: tuple[Component, ...] = ()
    layers: int = 0
    hidden: int = 0
    experts: int = 0
    """Routed experts per MoE layer (0: dense)."""
    top_k: int = 0
    moe_layers: int = 0
    expert_params: float = 0.0
    """Parameters of one routed expert of one layer."""


def load_config(path: Path) -> dict[str, Any]:
    """A config.json, bounded in size and depth (an untrusted input); one clear line when it is not one."""
    from rigaudit.tools.files.bounded import load_json

    raw = load_json(path, limit=MAX_CONFIG_BYTES)
    if not isinstance(raw, dict):
        raise BenchInputError(f"{path} is not a model config (a JSON object)")
    return raw


def _int(cfg: dict[str, Any], *names: str, default: int | None = None) -> int | None:
    for name in names:
        value = cfg.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    if "hidden_size" in cfg:
        return cfg
    for key in ("text_config", "llm_config", "language_config"):
        nested = cfg.get(key)
        if isinstance(nested, dict) and "hidden_size" in nested:
            return nested
    raise BenchInputError("config has no hidden_size (nor a text_config with one): not a decoder config rigaudit knows")


def _attention(cfg: dict[str, Any], h: int, heads: int) -> tuple[int, int]:
    """(parameters, KV elements per token) of one attention layer."""
    kv_lora = _int(cfg, "kv_lora_rank")
    if kv_lora:  # multi-head latent attention (DeepSeek V2/V3, GLM-5, Kimi K2)
        nope = _int(cfg, "qk_nope_head_dim", default=128) or 128
        rope = _int(cfg, "qk_rope_head_dim", default=64) or 64
        v_dim = _int(cfg, "v_head_dim", default=nope) or nope
        q_lora = _int(cfg, "q_lora_rank")
        q = h * q_lora + q_lora * heads * (nope + rope) if q_lora else h * heads * (nope + rope)
        kv = h * (kv_lora + rope) + kv_lora * heads * (nope + v_dim)
        return q + kv + heads * v_dim * h, kv_lora + rope
    kv_heads = _int(cfg, "num_key_value_heads", default=heads) or heads
    head_dim = _int(cfg, "head_dim") or h // heads
    return h * heads * head_dim * 2 + 2 * h * kv_heads * head_dim, 2 * kv_heads * head_dim


def _moe_layers(cfg: dict[str, Any], layers: int) -> list[bool]:
    """Which layers have experts."""
    first_dense = _int(cfg, "first_k_dense_replace", default=0) or 0
    step = _int(cfg, "decoder_sparse_step", "moe_layer_freq", default=1) or 1
    dense_only = cfg.get("mlp_only_layers") or []
    return [i >= first_dense and (i + 1) % step == 0 and i not in dense_only for i in range(layers)]


def _names(cfg: dict[str, Any]) -> dict[str, str]:
    """Representative module names per kind, with ``{i}`` for the layer (Hugging Face naming of the architecture)."""
    model_type = str(cfg.get("model_type", "")).lower()
    names = {
        "attn": "model.layers.{i}.self_attn.o_proj",
        "mlp": "model.layers.{i}.mlp.down_proj",
        "experts": "model.layers.{i}.mlp.experts.0.down_proj",
        "shared": "model.layers.{i}.mlp.shared_experts.down_proj",
        "router": "model.layers.{i}.mlp.gate",
    }
    if model_type.startswith("mixtral"):
        names |= {"experts": "model.layers.{i}.block_sparse_moe.experts.0.w2", "router": "model.layers.{i}.block_sparse_moe.gate"}
    elif model_type.startswith("qwen") and "moe" in model_type:
        names["shared"] = "model.layers.{i}.mlp.shared_expert.down_proj"
    elif model_type.startswith("gpt_oss"):
        names |= {"experts": "model.layers.{i}.mlp.experts", "router": "model.layers.{i}.mlp.router"}
    return names


def _sizes(cfg: dict[str, Any]) -> tuple[int, int, int, int]:
    """(hidden size, layers, vocabulary, attention heads); raises BenchInputError when one is missing or absurd."""
    h = _int(cfg, "hidden_size")
    layers = _int(cfg, "num_hidden_layers", "num_layers", "n_layer")
    vocab = _int(cfg, "vocab_size")
    heads = _int(cfg, "num_attention_heads", "n_head")
    missing = [
        n
        for n, v in (("hidden_size", h), ("num_hidden_layers", layers), ("vocab_size", vocab), ("num_attention_heads", heads))
        if not v
    ]
    if missing or h is None or layers is None or vocab is None or heads is None:
        raise BenchInputError(f"config lacks {', '.join(missing)}")
    if layers > 100_000 or h > 10_000_000 or vocab > 100_000_000:
        raise BenchInputError("config sizes out of any model's range (layers, hidden_size or vocab_size)")
    return h, layers, vocab, heads


def _expert_params(cfg: dict[str, Any], h: int, intermediate: int) -> tuple[int, int]:
    """(parameters of one routed expert, of the shared experts) of one MoE layer."""
    expert = 3 * h * (_int(cfg, "moe_intermediate_size", "expert_intermediate_size", default=intermediate) or intermediate)
    shared_size = _int(cfg, "shared_expert_intermediate_size")
    shared_count = _int(cfg, "n_shared_experts", "num_shared_experts", default=0) or 0
    return expert, 3 * h * shared_size if shared_size else shared_count * expert


def _embeddings(cfg: dict[str, Any], config: dict[str, Any], vocab: int, h: int) -> list[Component]:
    """The embedding and the LM head; tied, the LM head is the embedding matrix, read for every token."""
    tied = bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))
    if tied:
        return [Component("embed", None, vocab * h, vocab * h, "model.embed_tokens")]
    return [
        Component("embed", None, vocab * h, 0, "model.embed_tokens"),
        Component("lm_head", None, vocab * h, vocab * h, "lm_head"),
    ]


def shape_from_config(config: dict[str, Any]) -> ModelShape:
    """Count parameters from a config; raises BenchInputError on a config without the basic sizes."""
    cfg = _text_config(config)
    h, layers, vocab, heads = _sizes(cfg)
    notes = ["approximate: norms, biases and the embedding lookup left out; gated MLPs assumed"]
    names = _names(cfg)
    attention, kv_per_layer = _attention(cfg, h, heads)
    intermediate = _int(cfg, "intermediate_size", "ffn_hidden_size", default=4 * h) or 4 * h
    dense_mlp = 3 * h * intermediate
    experts = _int(cfg, "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts") or 0
    top_k = _int(cfg, "num_experts_per_tok", "moe_topk", "num_experts_per_token", "top_k") or 0
    moe = bool(experts > 1 and top_k)
    sparse = _moe_layers(cfg, layers) if moe else [False] * layers
    expert, shared = _expert_params(cfg, h, intermediate) if moe else (0, 0)
    if moe:
        notes.append(
            f"MoE: {sum(sparse)} of {layers} layers with {experts} experts, {top_k} active per token"
            + (", plus shared experts" if shared else "")
        )
    parts: list[Component] = []
    for i in range(layers):
        parts.append(Component("attn", i, attention, attention, names["attn"].format(i=i)))
        if sparse[i]:
            parts.append(Component("experts", i, experts * expert, min(top_k, experts) * expert, names["experts"].format(i=i)))
            parts.append(Component("router", i, h * experts, h * experts, names["router"].format(i=i)))
            if shared:
                parts.append(Component("shared", i, shared, shared, names["shared"].format(i=i)))
        else:
            parts.append(Component("mlp", i, dense_mlp, dense_mlp, names["mlp"].format(i=i)))
    parts += _embeddings(cfg, config, vocab, h)
    if _int(cfg, "num_nextn_predict_layers"):
        notes.append("multi-token-prediction layers not counted (unused in plain decode)")
    return ModelShape(
        float(sum(p.total for p in parts)),
        float(sum(p.active for p in parts)),
        float(layers * kv_per_layer),
        moe,
        notes,
        components=tuple(parts),
        layers=layers,
        hidden=h,
        experts=experts if moe else 0,
        top_k=top_k if moe else 0,
        moe_layers=sum(sparse),
        expert_params=float(expert),
    )


_QUANT_BYTES = {"fp8": 1.0, "fbgemm_fp8": 1.0, "mxfp4": 0.53125, "nvfp4": 0.5625, "modelopt": 0.5625, "bitsandbytes": 0.5}
_DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "float8_e4m3fn": 1.0}


def guess_bytes_per_param(config: dict[str, Any]) -> tuple[float, str] | None:
    """Bytes per weight from ``quantization_config`` or the dtype; None when the config does not say."""
    quant = config.get("quantization_config")
    if isinstance(quant, dict):
        method = str(quant.get("quant_method", "")).lower()
        algo = str(quant.get("quant_algo", "")).lower()
        if "nvfp4" in algo or "fp4" in algo:
            why = f"{method or 'quantized'} {algo}: 4-bit values + an FP8 scale per 16 (layers kept in BF16 read more)"
            return 0.5625, why
        bits = quant.get("bits") or quant.get("w_bit")
        if isinstance(bits, int) and method in ("gptq", "awq", "compressed-tensors", "auto-round"):
            group = quant.get("group_size") or quant.get("q_group_size") or 128
            size = bits / 8 + (2.0 / group if isinstance(group, int) and group > 0 else 0.0)
            return size, f"{method} {bits}-bit, group {group}: ~{size:.3f} bytes per weight with scales"
        if method in _QUANT_BYTES:
            return _QUANT_BYTES[method], f"quant_method {method}"
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "").lower()
    if dtype in _DTYPE_BYTES:
        return _DTYPE_BYTES[dtype], f"dtype {dtype}"
    return None
