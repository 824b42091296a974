"""The single-stream decode roofline: the most tokens/s any system can give one request.

tokens/s <= aggregate memory bandwidth / bytes read per token, where a token reads every active
weight once (active parameters x bytes per parameter) plus the KV cache of its context. Measured
/ bound is the efficiency: far below the bound, no PCIe, NUMA or clock fix explains the gap.

Examples:
  rigaudit roofline --params-b 40 --bytes-per-param 0.5625 --gpus 8 --gpu-model "RTX PRO 6000 Blackwell" --measured-tok-s 10.34
  rigaudit roofline --config /models/Qwen3-30B-A3B/config.json --gpu-model H200 --gpus 2 --context 8192
  rigaudit roofline --params-b 8 --bytes-per-param 2 --measure --gpus 2 --yes

Parameter counts from a config.json are approximate (norms, biases, the embedding lookup left out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from rigaudit.orchestrator.command import Command
from rigaudit.tools.bench.model_config import guess_bytes_per_param, load_config, shape_from_config
from rigaudit.tools.bench.render import roofline_lines
from rigaudit.tools.bench.roofline import GPU_BANDWIDTH_GBS, Roofline, lookup_bandwidth
from rigaudit.tools.errors import UsageError


def _add(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("the model")
    model.add_argument("--params-b", type=float, help="active parameters per token, billions (overrides --config)")
    model.add_argument("--bytes-per-param", type=float, help="bytes per weight: 2 BF16, 1 FP8, 0.5625 NVFP4 with scales")
    model.add_argument("--config", type=Path, help="a Hugging Face config.json: active parameters (dense or MoE) and KV size")
    model.add_argument("--kv-bytes-per-token", type=float, help="KV-cache bytes per context token (default: --config, else 0)")
    model.add_argument("--kv-bytes-per-element", type=float, default=2.0, help="KV dtype bytes with --config (2; FP8 KV: 1)")
    model.add_argument("--context", type=int, default=0, help="context length whose KV cache each token reads (default 0)")
    hw = parser.add_argument_group("the GPUs")
    hw.add_argument("--gpus", type=int, default=1, help="GPUs the model is split over (default 1)")
    source = hw.add_mutually_exclusive_group()
    source.add_argument("--bandwidth-gbs", type=float, help="memory bandwidth per GPU, GB/s")
    source.add_argument("--gpu-model", help=f"a GPU from the table: {', '.join(GPU_BANDWIDTH_GBS)}")
    source.add_argument("--measure", action="store_true", help="measure it: a device-to-device copy on each GPU (torch)")
    parser.add_argument("--measured-tok-s", type=float, help="single-stream decode tok/s you measured: prints measured / bound")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the result as JSON (no FILE or '-': stdout)")
    parser.add_argument("--yes", action="store_true", help="approve --measure without asking")


def _bandwidth(args: argparse.Namespace) -> tuple[float, str]:
    if args.bandwidth_gbs is not None:
        if args.bandwidth_gbs <= 0:
            raise UsageError("--bandwidth-gbs must be positive")
        return args.bandwidth_gbs, "given"
    if args.gpu_model:
        found = lookup_bandwidth(args.gpu_model)
        if found is None:
            known = ", ".join(GPU_BANDWIDTH_GBS)
            raise UsageError(f"--gpu-model {args.gpu_model!r} is not in the table ({known}); give --bandwidth-gbs")
        return found[1], f"{found[0]} data sheet"
    if args.measure:
        from rigaudit.orchestrator.approval import require_approval
        from rigaudit.tools.bench.membw import measure_copy_bandwidth

        require_approval(
            "measure GPU memory bandwidth",
            [f"a 1 GiB device-to-device copy, 20 times, on GPUs 0..{args.gpus - 1}"],
            assume_yes=bool(args.yes),
        )
        per_gpu = measure_copy_bandwidth(range(args.gpus))
        each = ", ".join(f"{v:,.0f}" for v in per_gpu)
        return min(per_gpu), f"measured: device-to-device copy, read + write; per GPU {each} GB/s, the slowest counts"
    raise UsageError("say how fast the GPUs' memory is: --bandwidth-gbs X, --gpu-model NAME, or --measure")


def _model(args: argparse.Namespace, console: Console) -> tuple[float, float, float]:
    """(active params, bytes per param, KV bytes per token)."""
    active = args.params_b * 1e9 if args.params_b is not None else None
    per_param = args.bytes_per_param
    kv = args.kv_bytes_per_token
    if args.config is not None:
        config = load_config(args.config)
        shape = shape_from_config(config)
        console.print(
            f"{args.config}: {shape.total_params / 1e9:,.2f} B parameters, {shape.active_params / 1e9:,.2f} B active "
            f"per token ({'MoE' if shape.moe else 'dense'}); " + "; ".join(shape.notes),
            highlight=False,
        )
        active = active if active is not None else shape.active_params
        if per_param is None and (guess := guess_bytes_per_param(config)) is not None:
            per_param = guess[0]
            console.print(f"bytes per parameter: {guess[0]:g} ({guess[1]}); override with --bytes-per-param", highlight=False)
        if kv is None:
            kv = shape.kv_elements_per_token * args.kv_bytes_per_element
    if active is None or active <= 0:
        raise UsageError("give the active parameters: --params-b N (billions) or --config config.json")
    if per_param is None or per_param <= 0:
        raise UsageError("give --bytes-per-param (2 BF16, 1 FP8, 0.5625 NVFP4)")
    return active, per_param, kv or 0.0


def _run(args: argparse.Namespace) -> int:
    if args.gpus <= 0 or args.context < 0:
        raise UsageError("--gpus must be positive and --context non-negative")
    console = Console(stderr=args.json == "-", highlight=False)
    console = console if console.is_terminal else Console(stderr=args.json == "-", highlight=False, width=200)
    active, per_param, kv = _model(args, console)
    bandwidth, source = _bandwidth(args)
    roofline = Roofline(active, per_param, kv, args.context, args.gpus, bandwidth, source, args.measured_tok_s)
    for line in roofline_lines(roofline):
        console.print(line, highlight=False)
    if args.json:
        from rigaudit.orchestrator.output import write_json

        write_json(Path(args.json), json.dumps(roofline.to_dict(), indent=2))
    return 0


COMMAND = Command("roofline", "single-stream decode bound from memory bandwidth; measured / bound", _add, _run, __doc__ or "")
