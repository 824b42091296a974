"""The options that describe a model and its all-reduces: shared by ``roofline``, ``bench inference --profile``, ``explain``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rigaudit.orchestrator.commands._arguments import number
from rigaudit.tools.bench.comm import ASSUMED_US, CommTerm, comm_term, load_curve, message_bytes, parse_latency
from rigaudit.tools.bench.model_spec import ModelSpec, model_spec
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import replace

ASSUMED_HIDDEN = 8192
"""The all-reduce message size is hidden x 2 bytes; this hidden size when none is known."""

__all__ = ["add_comm_arguments", "add_model_arguments", "comm_from_args", "spec_from_args"]


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """How a model is described, shared by ``roofline`` and ``bench inference --profile`` / ``explain``."""
    model = parser.add_argument_group("the model")
    model.add_argument(
        "--config",
        type=Path,
        help="a Hugging Face config.json, or the checkpoint's folder (config.json and hf_quant_config.json): "
        "active parameters per weight format (dense or MoE), layers, hidden size, KV size",
    )
    model.add_argument("--quant-config", type=Path, help="a hf_quant_config.json or quantization config to use with --config")
    model.add_argument(
        "--params-b",
        type=number("a parameter count", above=0),
        help="active parameters per token, billions (overrides --config's count)",
    )
    model.add_argument(
        "--bytes-per-param",
        type=number("a width", above=0),
        help="one width for every weight: 2 BF16, 1 FP8, 0.5625 NVFP4 (overrides the formats)",
    )
    model.add_argument(
        "--kv-bytes-per-token",
        type=number("a KV size", least=0),
        help="KV-cache bytes per context token (default: from --config)",
    )
    model.add_argument(
        "--kv-bytes-per-element",
        type=number("a KV width", above=0),
        help="KV dtype bytes with --config (default: the quantization config's, else 2)",
    )
    model.add_argument("--layers", type=int, help="decoder layers, for the all-reduces (default: from --config)")
    model.add_argument("--hidden", type=int, help="hidden size, for the all-reduce message (default: from --config)")


def add_comm_arguments(parser: argparse.ArgumentParser) -> None:
    comm = parser.add_argument_group("communication (tensor parallelism over several GPUs)")
    way = comm.add_mutually_exclusive_group()
    way.add_argument("--nccl", type=Path, metavar="FILE", help="all-reduce latency measured by `rigaudit bench nccl --json FILE`")
    way.add_argument("--allreduce-us", metavar="US", help="latency of one all-reduce, µs: 20, or a range 20-40")
    way.add_argument(
        "--interconnect",
        choices=("nvlink", "pcie"),
        help="assume a latency range: " + "; ".join(f"{k} {lo:g}-{hi:g} µs" for k, (lo, hi) in ASSUMED_US.items()),
    )
    comm.add_argument("--allreduces-per-layer", type=int, default=2, help="all-reduces per layer (default 2: attention and MLP)")


def spec_from_args(args: argparse.Namespace) -> ModelSpec:
    for name in ("layers", "hidden"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name} must be positive")
    return model_spec(
        params_b=args.params_b,
        bytes_per_param=args.bytes_per_param,
        config=args.config,
        quant_config=args.quant_config,
        kv_bytes_per_token=args.kv_bytes_per_token,
        kv_bytes_per_element=args.kv_bytes_per_element,
        layers=args.layers,
        hidden=args.hidden,
    )


def comm_from_args(args: argparse.Namespace, spec: ModelSpec, world: int, tokens: float = 1.0) -> CommTerm | None:
    """The all-reduces of a step of ``tokens`` on ``world`` GPUs; None on one GPU or without the layer count."""
    if not 1 <= args.allreduces_per_layer <= 64:
        raise UsageError("--allreduces-per-layer wants a number from 1 to 64")
    given = parse_latency(args.allreduce_us) if args.allreduce_us else None
    if world <= 1 or spec.layers is None:
        return None
    term = comm_term(
        world=world,
        layers=spec.layers,
        per_layer=args.allreduces_per_layer,
        message_bytes=message_bytes(spec.hidden or ASSUMED_HIDDEN, tokens),
        curve=load_curve(args.nccl) if args.nccl is not None else None,
        given_us=given,
        interconnect=args.interconnect or "unknown",
    )
    if term is not None and spec.hidden is None:
        term = replace(term, source=f"{term.source}; hidden size {ASSUMED_HIDDEN} assumed, give --hidden")
    return term
