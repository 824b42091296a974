"""Bytes per token by weight format: which parts of a checkpoint its quantization config quantizes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.model_config import shape_from_config
from rigaudit.tools.bench.model_spec import FormatRow, ModelSpec, model_spec
from rigaudit.tools.bench.weights import matches, weight_mix

H, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 4096, 10, 32, 4, 128
DENSE_I, EXPERT_I, EXPERTS, TOP_K, VOCAB = 12288, 1024, 64, 4, 100_000
MOE: dict[str, Any] = {
    "model_type": "glm4_moe",
    "hidden_size": H,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "intermediate_size": DENSE_I,
    "moe_intermediate_size": EXPERT_I,
    "n_routed_experts": EXPERTS,
    "num_experts_per_tok": TOP_K,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "vocab_size": VOCAB,
    "torch_dtype": "bfloat16",
}
# by hand: one attention layer, the dense MLP of layer 0, one routed expert, one router, the LM head
ATTN = H * HEADS * HEAD_DIM * 2 + 2 * H * KV_HEADS * HEAD_DIM
DENSE = 3 * H * DENSE_I
EXPERT = 3 * H * EXPERT_I
ROUTER = H * EXPERTS
HEAD = VOCAB * H
SPARSE = LAYERS - 1
NVFP4, BF16 = 0.5 + 1 / 16, 2.0


def _mix(quant: dict[str, Any] | None, config: dict[str, Any] = MOE) -> Any:
    return weight_mix({**config, **({"quantization_config": quant} if quant else {})}, shape_from_config(config))


def _by_format(mix: Any) -> dict[str, float]:
    return {s.format: s.active_params for s in mix.shares}


def test_modelopt_nvfp4_keeps_excluded_modules_in_bf16() -> None:
    """The NVFP4 export the issue describes: attention, the LM head, shared experts and routers stay BF16."""
    quant = {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "exclude_modules": ["lm_head", "*self_attn*", "*shared_experts*", "*mlp.gate"],
    }
    mix = _mix(quant)
    bf16 = LAYERS * ATTN + SPARSE * (EXPERT + ROUTER) + HEAD
    fp4 = DENSE + SPARSE * TOP_K * EXPERT  # the dense MLP of layer 0 is not excluded
    assert _by_format(mix) == {"BF16": pytest.approx(bf16), "NVFP4": pytest.approx(fp4)}
    assert mix.fraction("BF16") == pytest.approx(bf16 / (bf16 + fp4))
    assert mix.bytes_per_param == pytest.approx((bf16 * BF16 + fp4 * NVFP4) / (bf16 + fp4))
    assert mix.kv_bytes_per_element == 1.0
    assert mix.expert_bytes == pytest.approx(EXPERT * NVFP4)
    # one width for all (the old roofline) would have read this many fewer bytes per token
    assert mix.active_bytes > 1.9 * (bf16 + fp4) * NVFP4


def test_modelopt_patterns_that_name_single_layers() -> None:
    quant = {"quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.1.self_attn*"]}  # hf_quant_config style
    mix = _mix(quant)
    # only layer 1's attention stays BF16 (not layer 10's, whose name starts the same way)
    assert _by_format(mix)["BF16"] == pytest.approx(ATTN + HEAD)


def test_compressed_tensors_nvfp4_with_regex_ignores() -> None:
    quant = {
        "quant_method": "compressed-tensors",
        "format": "nvfp4-pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$", "re:.*self_attn.*"],
    }
    mix = _mix(quant)
    bf16 = LAYERS * ATTN + SPARSE * ROUTER + HEAD
    assert _by_format(mix)["BF16"] == pytest.approx(bf16)  # shared experts are quantized here
    assert _by_format(mix)["NVFP4"] == pytest.approx(DENSE + SPARSE * (TOP_K * EXPERT + EXPERT))


def test_compressed_tensors_groups_by_target() -> None:
    quant = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "experts": {
                "targets": ["re:.*experts.*"],
                "weights": {"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group"},
            },
            "rest": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}},
        },
        "ignore": ["lm_head"],
        "kv_cache_scheme": {"num_bits": 8, "type": "float"},
    }
    mix = _mix(quant)
    formats = _by_format(mix)
    assert formats["INT4 g128"] == pytest.approx(SPARSE * (TOP_K + 1) * EXPERT)  # routed and shared experts
    assert formats["FP8"] == pytest.approx(LAYERS * ATTN + DENSE + SPARSE * ROUTER)
    assert formats["BF16"] == pytest.approx(HEAD)
    assert mix.kv_bytes_per_element == 1.0


def test_fp8_gptq_awq_mxfp4_bitsandbytes_leave_the_head_and_routers_alone() -> None:
    fp8 = _mix({"quant_method": "fp8", "weight_block_size": [128, 128]})
    assert _by_format(fp8)["BF16"] == pytest.approx(HEAD + SPARSE * ROUTER)
    gptq = _mix({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": False})
    assert {s.format: s.bytes_per_param for s in gptq.shares}["INT4 g128"] == pytest.approx(0.5 + 2 / 128)
    assert _by_format(gptq)["BF16"] == pytest.approx(HEAD + SPARSE * ROUTER)
    head_too = _mix({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": True})
    assert _by_format(head_too)["BF16"] == pytest.approx(SPARSE * ROUTER)
    awq = _mix({"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["self_attn"]})
    assert _by_format(awq)["BF16"] == pytest.approx(HEAD + SPARSE * ROUTER + LAYERS * ATTN)
    mxfp4 = _mix({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})
    assert _by_format(mxfp4)["BF16"] == pytest.approx(HEAD + SPARSE * ROUTER + LAYERS * ATTN)
    nf4 = _mix({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True})
    assert {s.format for s in nf4.shares} == {"NF4", "BF16"}


def test_unknown_or_missing_quantization_is_said_not_guessed() -> None:
    odd = _mix({"quant_method": "mystery-9bit"})
    assert [s.format for s in odd.shares] == ["BF16"] and any("not understood" in n for n in odd.notes)
    plain = _mix(None, {k: v for k, v in MOE.items() if k != "torch_dtype"})
    assert any("BF16 assumed" in n for n in plain.notes)
    assert plain.bytes_per_param == 2.0


def test_module_name_matching() -> None:
    assert matches("model.layers.3.self_attn.o_proj", "self_attn")
    assert matches("model.layers.3.self_attn.o_proj", "model.layers.3.self_attn")
    assert not matches("model.layers.3.mlp.gate_proj", "mlp.gate")  # a segment, not a substring
    assert matches("model.layers.3.mlp.gate", "re:.*mlp.gate$")
    assert not matches("model.layers.3.mlp.gate", "re:[unclosed")  # a broken pattern matches nothing
    assert matches("model.layers.3.self_attn.o_proj", "model.layers.*.self_attn")
    assert not matches("model.layers.30.self_attn.o_proj", "model.layers.3.self_attn*")


def test_a_batch_touches_more_experts_but_never_more_than_all() -> None:
    mix = weight_mix(MOE, shape_from_config(MOE))
    moe = ModelSpec(
        formats=[FormatRow(format="BF16", bytes_per_param=2.0, active_params=mix.active_params)],
        kv_bytes_per_token=0,
        moe_layers=SPARSE,
        experts=EXPERTS,
        top_k=TOP_K,
        expert_bytes=EXPERT * 2.0,
    )
    sizes = [moe.weight_bytes(n) for n in (1, 2, 4, 16, 64, 1024)]
    assert sizes[0] == pytest.approx(moe.active_bytes)
    assert all(a < b for a, b in itertools.pairwise(sizes))
    every_expert = moe.active_bytes + SPARSE * (EXPERTS - TOP_K) * EXPERT * 2.0
    assert sizes[-1] == pytest.approx(every_expert, rel=1e-6) and all(s <= every_expert * (1 + 1e-9) for s in sizes)
    assert moe.weight_bytes(2) < 2 * moe.active_bytes  # one read serves both streams' shared weights
    dense = ModelSpec(formats=[FormatRow(format="BF16", bytes_per_param=2.0, active_params=8e9)], kv_bytes_per_token=0)
    assert dense.weight_bytes(1) == dense.weight_bytes(64) == 16e9


def test_checkpoint_folder_reads_its_hf_quant_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text(json.dumps(MOE))
    quant = {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head", "*self_attn*"]}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": quant}))
    spec = model_spec(config=tmp_path)
    assert {f.format for f in spec.formats} == {"BF16", "NVFP4"}
    assert spec.kv_bytes_per_token == LAYERS * 2 * KV_HEADS * HEAD_DIM * 1.0  # FP8 KV cache
    assert spec.layers == LAYERS and spec.hidden == H and spec.experts == EXPERTS
    # a config.json named alone is read alone: no file beside it is opened
    alone = model_spec(config=tmp_path / "config.json")
    assert [f.format for f in alone.formats] == ["BF16"]
    out = tmp_path / "roof.json"
    assert main(["roofline", "--config", str(tmp_path), "--gpu-model", "B200", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert {w["format"] for w in data["weights"]} == {"BF16", "NVFP4"}
    assert any("NVFP4" in a and "BF16" in a for a in data["assumptions"])
    assert "NVFP4" in capsys.readouterr().out
