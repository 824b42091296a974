"""The profile's options (``bench inference --profile``, ``explain``), read from the command line into
:class:`~rigaudit.orchestrator.bench.explain.ProfileOptions`. A helper of the command modules."""

from __future__ import annotations

import argparse

from rigaudit.orchestrator.bench.explain import MAX_INTERVAL_MS, MIN_INTERVAL_MS, CommOptions, ProfileOptions
from rigaudit.orchestrator.commands._arguments import number
from rigaudit.orchestrator.commands._model import add_comm_arguments, add_model_arguments, spec_from_args
from rigaudit.tools.bench.comm import load_curve, parse_latency
from rigaudit.tools.core.errors import UsageError


def add_profile_arguments(parser: argparse.ArgumentParser, *, live: bool = True) -> None:
    """The profile's options (``live``: also sampling and bandwidth measurement, which need the server's host)."""
    group = parser.add_argument_group("the profile (where the time of a token goes)")
    if live:
        group.add_argument(
            "--profile-interval-ms",
            type=int,
            default=100,
            help=f"NVML sampling interval, {MIN_INTERVAL_MS}-{MAX_INTERVAL_MS} ms (default 100)",
        )
        group.add_argument("--gpus", help="NVML indices of the serving GPUs, e.g. 0,1 (default: those with compute processes)")
    group.add_argument("--tp", type=int, help="GPUs one copy of the model is split over (default: every serving GPU)")
    way = group.add_mutually_exclusive_group()
    way.add_argument("--bandwidth-gbs", type=number("a bandwidth", above=0), help="achievable memory bandwidth per GPU, GB/s")
    if live:
        way.add_argument(
            "--measure-bandwidth",
            action="store_true",
            help="measure it first: a 1 GiB matrix-vector product on each serving GPU (torch, in this process)",
        )
    add_model_arguments(parser)
    add_comm_arguments(parser)


def _gpus(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        values = ()
    if not values or any(not 0 <= v < 4096 for v in values) or len(set(values)) != len(values):
        raise UsageError(f"--gpus wants different NVML indices like 0,1, not {text!r}")
    return values


def _described(args: argparse.Namespace) -> bool:
    return any(getattr(args, name, None) is not None for name in ("config", "params_b", "bytes_per_param"))


_PROFILE_ONLY = (
    "config",
    "quant_config",
    "params_b",
    "bytes_per_param",
    "kv_bytes_per_token",
    "kv_bytes_per_element",
    "layers",
    "hidden",
    "nccl",
    "allreduce_us",
    "interconnect",
    "tp",
    "gpus",
    "bandwidth_gbs",
)


def stray_profile_options(args: argparse.Namespace) -> list[str]:
    """Profile options given without ``--profile`` (they would do nothing)."""
    found = [f"--{name.replace('_', '-')}" for name in _PROFILE_ONLY if getattr(args, name, None) is not None]
    return found + (["--measure-bandwidth"] if getattr(args, "measure_bandwidth", False) else [])


def profile_options_from_args(args: argparse.Namespace) -> ProfileOptions:
    """The typed options; one clear line for any that do not make sense (before anything runs)."""
    interval_ms = getattr(args, "profile_interval_ms", 100)
    if not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
        raise UsageError(f"--profile-interval-ms wants {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS}, not {interval_ms}")
    if args.tp is not None and not 1 <= args.tp <= 4096:
        raise UsageError("--tp wants a number of GPUs from 1 to 4096")
    if args.bandwidth_gbs is not None and not 0 < args.bandwidth_gbs < 1e6:
        raise UsageError("--bandwidth-gbs must be a positive number of GB/s")
    if not 1 <= args.allreduces_per_layer <= 64:
        raise UsageError("--allreduces-per-layer wants a number from 1 to 64")
    return ProfileOptions(
        interval_s=interval_ms / 1000,
        gpus=_gpus(getattr(args, "gpus", None)),
        tp=args.tp,
        model=spec_from_args(args) if _described(args) else None,
        bandwidth_gbs=args.bandwidth_gbs,
        measure_bandwidth=bool(getattr(args, "measure_bandwidth", False)),
        comm=CommOptions(
            curve=load_curve(args.nccl) if args.nccl is not None else None,
            latency_us=parse_latency(args.allreduce_us) if args.allreduce_us else None,
            interconnect=args.interconnect,
            per_layer=args.allreduces_per_layer,
        ),
    )
