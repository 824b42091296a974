"""The decode roofline: arithmetic from explicit numbers, from config.json (dense and MoE), and the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.model_config import guess_bytes_per_param, shape_from_config
from rigaudit.tools.bench.roofline import Roofline, lookup_bandwidth

LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
MIXTRAL_8X7B: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "torch_dtype": "bfloat16",
}
DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "num_attention_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "num_nextn_predict_layers": 1,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


def _roof(
    params_b: float, bpp: float, gpus: int, bw: float, measured: float | None = None, kv: float = 0, ctx: int = 0
) -> Roofline:
    return Roofline(params_b * 1e9, bpp, kv, ctx, gpus, bw, "given", measured)


def test_bound_is_bandwidth_over_bytes_per_token() -> None:
    # 8B params in BF16 on one H200: 4800e9 / 16e9 = 300 tok/s
    assert _roof(8, 2, 1, 4800).bound_tok_s == pytest.approx(300.0)
    # the KV read adds to the bytes: 128 KiB per token x 32768 tokens = 4.29 GB more
    with_kv = _roof(8, 2, 1, 4800, kv=131072, ctx=32768)
    assert with_kv.bytes_per_token == pytest.approx(16e9 + 131072 * 32768)
    assert with_kv.bound_tok_s == pytest.approx(4800e9 / (16e9 + 131072 * 32768))


def test_story_glm5_nvfp4_on_8x_rtx_pro_6000() -> None:
    """The story's numbers: 10.34 tok/s measured on 8 x RTX PRO 6000 Blackwell (1792 GB/s each).

    Checked arithmetic: 40 B active params, all at NVFP4's 0.5625 bytes (4 bits + an FP8 scale per 16),
    give 22.5 GB per token and a 637 tok/s bound. The story's ~309 tok/s bound needs 14336 / 309 = 46.4 GB
    per token, i.e. ~1.16 bytes per active parameter: the NVFP4 checkpoint keeps attention, shared experts
    and dense layers in BF16, so the effective width is about double the routed experts'. Either way the
    measured speed is 1.6-3.3% of the bound: far below, which no system fix explains.
    """
    all_fp4 = _roof(40, 0.5625, 8, 1792, measured=10.34)
    assert all_fp4.aggregate_gbs == 14336
    assert all_fp4.bound_tok_s == pytest.approx(637.2, abs=0.1)
    as_served = _roof(40, 1.16, 8, 1792, measured=10.34)
    assert as_served.bound_tok_s == pytest.approx(309, abs=1)
    assert as_served.efficiency == pytest.approx(0.0335, abs=0.001)
    for roof in (all_fp4, as_served):
        assert (roof.verdict() or "").startswith("far below the bound")


def test_verdicts_by_efficiency() -> None:
    assert (_roof(8, 2, 1, 4800, measured=250).verdict() or "").startswith("near the bound")
    assert (_roof(8, 2, 1, 4800, measured=100).verdict() or "").startswith("well below")
    assert (_roof(8, 2, 1, 4800, measured=400).verdict() or "").startswith("above the bound")
    assert _roof(8, 2, 1, 4800).verdict() is None


def test_gpu_table_lookup() -> None:
    assert lookup_bandwidth("H200") == ("H200", 4800.0)
    assert lookup_bandwidth("NVIDIA H200") == ("H200", 4800.0)
    assert lookup_bandwidth("rtx pro 6000 blackwell") == ("RTX PRO 6000 Blackwell", 1792.0)
    assert lookup_bandwidth("NVIDIA H100 80GB HBM3") == ("H100 SXM", 3350.0)
    assert lookup_bandwidth("L40S") == ("L40S", 864.0)
    assert lookup_bandwidth("Voodoo 5") is None


def test_dense_config_llama3_8b() -> None:
    shape = shape_from_config(LLAMA3_8B)
    assert not shape.moe
    assert shape.total_params / 1e9 == pytest.approx(8.03, abs=0.01)
    # everything but the input embedding is read per token: 8.03 B - 0.525 B
    assert shape.active_params / 1e9 == pytest.approx(7.50, abs=0.01)
    assert shape.kv_elements_per_token == 32 * 2 * 8 * 128  # 64 KiB elements: 128 KiB per token in BF16
    assert guess_bytes_per_param(LLAMA3_8B) == (2.0, "dtype bfloat16")
    assert any("approximate" in note for note in shape.notes)


def test_moe_config_mixtral() -> None:
    shape = shape_from_config(MIXTRAL_8X7B)
    assert shape.moe
    assert shape.total_params / 1e9 == pytest.approx(46.70, abs=0.05)  # Mixtral's published 46.7 B
    assert shape.active_params / 1e9 == pytest.approx(12.75, abs=0.05)  # 12.9 B published, less the 0.13 B embedding


def test_moe_config_with_mla_and_shared_experts_deepseek_v3() -> None:
    shape = shape_from_config(DEEPSEEK_V3)
    assert shape.total_params / 1e9 == pytest.approx(671, rel=0.005)  # published: 671 B (MTP excluded)
    assert shape.active_params / 1e9 == pytest.approx(36.6, rel=0.01)  # published: 37 B with embeddings
    assert shape.kv_elements_per_token == 61 * (512 + 64)  # the MLA latent cache
    assert guess_bytes_per_param(DEEPSEEK_V3) == (1.0, "quant_method fp8")
    assert any("multi-token-prediction" in note for note in shape.notes)


def test_nested_text_config_and_bad_configs() -> None:
    assert shape_from_config({"text_config": LLAMA3_8B}).active_params == shape_from_config(LLAMA3_8B).active_params
    with pytest.raises(BenchInputError, match="hidden_size"):
        shape_from_config({"model_type": "vision"})
    with pytest.raises(BenchInputError, match="vocab_size"):
        shape_from_config({k: v for k, v in LLAMA3_8B.items() if k != "vocab_size"})
    nvfp4 = {"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}
    assert (guess_bytes_per_param(nvfp4) or (0, ""))[0] == 0.5625


def test_cli_from_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "roofline",
            "--params-b",
            "40",
            "--bytes-per-param",
            "0.5625",
            "--gpus",
            "8",
            "--gpu-model",
            "RTX PRO 6000 Blackwell",
            "--measured-tok-s",
            "10.34",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "637.2 tok/s" in out and "1.6% of the bound" in out and "far below" in out


def test_cli_from_config_with_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MIXTRAL_8X7B))
    out = tmp_path / "roof.json"
    code = main(
        ["roofline", "--config", str(config), "--gpu-model", "H200", "--gpus", "2", "--context", "4096", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "rigaudit.roofline/1"
    assert data["bytes_per_param"] == 2.0 and data["kv_bytes_per_token"] == 32 * 2 * 8 * 128 * 2
    assert data["bound_tok_s"] == pytest.approx(9600e9 / (12.75e9 * 2 + 131072 * 4096), rel=0.01)
    assert "MoE" in capsys.readouterr().out


def test_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roofline", "--params-b", "8", "--bytes-per-param", "2"]) == 2
    assert "--bandwidth-gbs" in capsys.readouterr().err
    assert main(["roofline", "--params-b", "8", "--gpu-model", "H200"]) == 2
    assert "--bytes-per-param" in capsys.readouterr().err
    assert main(["roofline", "--config", str(tmp_path / "nope.json"), "--gpu-model", "H200"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["roofline", "--params-b", "8", "--bytes-per-param", "2", "--gpu-model", "Voodoo"]) == 2
    assert main(["roofline", "--params-b", "8", "--bytes-per-param", "2", "--measure"]) == 3  # no terminal, no --yes
