"""The options of ``bench inference``, ``calibrate``, ``compare`` and ``ab``, read into typed records.

A helper of the command modules: the load's options become a
:class:`~rigaudit.tools.bench.loadgen.LoadSpec` (or an
:class:`~rigaudit.orchestrator.bench.run.InferenceRun`), the judging options a
:class:`~rigaudit.tools.bench.compare.Settings`; the work below (``orchestrator/bench/``) takes only those.
:func:`inference_run` reads the chat's ``/bench inference ARGS`` words the same way.
"""

from __future__ import annotations

import argparse
import os
import typing
from collections.abc import Sequence

from rigaudit.orchestrator.bench.run import InferenceRun
from rigaudit.orchestrator.commands._arguments import number, positive_seconds, url
from rigaudit.tools.bench.compare import DEFAULT_SESSION_CV, Settings, check_settings
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.core.errors import UsageError


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{what} wants numbers like 1,4,16, not {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} wants positive numbers, not {text!r}")
    return values


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """The load's options, shared by ``bench inference`` and ``bench ab``."""
    parser.add_argument(
        "--base-url", type=url, help="the server, e.g. http://127.0.0.1:30000 (with or without /v1; http:// if no scheme)"
    )
    parser.add_argument("--model", help="model name as the server knows it")
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    parser.add_argument("--concurrency", default="1,4,16", help="levels, e.g. 1,4,16 (default)")
    parser.add_argument("--requests", type=int, help="requests per level and repeat (default: 4 per slot, at least 8)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests first, excluded from every figure (default 2)")
    parser.add_argument(
        "--slo",
        action="append",
        metavar="KEY=MS",
        help="a service-level objective for goodput: ttft_ms=200, tpot_ms=50 or e2e_ms=5000 (repeatable)",
    )
    parser.add_argument("--no-ignore-eos", action="store_true", help="do not send ignore_eos (for servers that reject it)")
    parser.add_argument(
        "--api-key-env", metavar="NAME", help="the variable holding the server's bearer token, if it wants one (as in audit)"
    )
    parser.add_argument("--api-key", help=argparse.SUPPRESS)  # the old spelling: a token in argv, seen by ps
    parser.add_argument("--timeout", type=positive_seconds, default=600.0, help="per-request timeout, s")


def add_inference_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench inference`` (the chat's ``/bench inference ARGS`` reads the same)."""
    from rigaudit.tools.bench.schedule import ORDERS

    add_load_arguments(parser)
    parser.add_argument("--repeat", type=int, default=1, help="run every level K times (compare needs 3 or more; 5 is better)")
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="balanced",
        help="balanced (default): each repeat runs the levels in a row of a Williams Latin square, so a drift over "
        "the session is not taken for a difference between levels; sequential: the same order every repeat",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        default=1,
        help="run N sessions, each a fresh process with new connections (--json FILE: FILE-s01.json, ...); "
        "several sessions a side let bench compare decide (default 1)",
    )
    parser.add_argument("--gap-s", type=number("a gap", least=0), default=5.0, help="seconds between --sessions (default 5)")
    parser.add_argument("--command", help="run this external benchmark instead and parse its summary (sglang, vLLM)")


API_KEY_NOTE = "rigaudit: note: --api-key is now --api-key-env NAME (a variable holding the key, as in audit)"


def _api_key(args: argparse.Namespace) -> str | None:
    """The bearer token: from the variable ``--api-key-env`` names, or (old spelling, with a notice) ``--api-key``."""
    if args.api_key is not None:  # the command prints API_KEY_NOTE
        if args.api_key_env is not None:
            raise UsageError("--api-key and --api-key-env: give one (--api-key-env NAME, the variable holding the key)")
        return str(args.api_key)
    if args.api_key_env is None:
        return None
    key = os.environ.get(args.api_key_env)
    if not key:
        raise UsageError(f"--api-key-env {args.api_key_env}: no such variable is set (or it is empty)")
    return key


def load_spec(args: argparse.Namespace, what: str = "bench inference") -> LoadSpec:
    """The LoadSpec of the load options, every one bounded (one clear line otherwise)."""
    from rigaudit.tools.bench.endpoint import check_url
    from rigaudit.tools.bench.serving import parse_slo

    if not args.base_url or not args.model:
        raise UsageError(f"{what} needs --base-url and --model")
    check_url(args.base_url)
    for name, value, low, high in (
        ("--max-tokens", args.max_tokens, 1, 131_072),
        ("--prompt-tokens", args.prompt_tokens, 1, 131_072),
        ("--repeat", getattr(args, "repeat", 1), 1, 100),
        ("--requests", args.requests if args.requests is not None else 1, 1, 100_000),
        ("--warmup", args.warmup, 0, 10_000),
    ):
        if not low <= value <= high:
            raise UsageError(f"{name} wants a whole number from {low} to {high}, not {value}")
    if not 0 < args.timeout <= 86_400:
        raise UsageError(f"--timeout wants seconds from 0 to 86400, not {args.timeout:g}")
    concurrency = _ints(args.concurrency, "--concurrency")
    if max(concurrency) > 4096 or len(concurrency) > 32 or len(set(concurrency)) != len(concurrency):
        raise UsageError(f"--concurrency wants up to 32 different levels of at most 4096, not {args.concurrency!r}")
    return LoadSpec(
        base_url=args.base_url,
        model=args.model,
        api=args.api,
        concurrency=concurrency,
        requests=args.requests,
        max_tokens=args.max_tokens,
        prompt_tokens=args.prompt_tokens,
        repeat=getattr(args, "repeat", 1),
        warmup=args.warmup,
        ignore_eos=not args.no_ignore_eos,
        api_key=_api_key(args),
        timeout_s=args.timeout,
        order=getattr(args, "order", "balanced"),
        slo=parse_slo(args.slo or []),
    )


def inference_run_from_args(args: argparse.Namespace) -> InferenceRun:
    """The typed run for parsed ``bench inference`` options; one clear line when they do not make one."""
    if args.command:
        return InferenceRun(command=args.command, base_url=args.base_url, model=args.model)
    if not args.base_url or not args.model:
        raise UsageError("bench inference needs --base-url and --model (or --command)")
    return InferenceRun(spec=load_spec(args))


JUDGING = f"""how the verdicts are reached (repeats and sessions are the units):
  each repeat's figure per level (output tok/s, the headline; TTFT and ITL medians) counts once;
  change = ratio of geometric means (each side: the mean of its sessions' means) with a t interval
  on the log scale (bench ab: a paired t interval over its A/B cycles); the p-values of every level
  and metric shown are adjusted together (Holm's weighted step-down; output tok/s carries 2/3 of
  each level's weight), so identical configurations are called different at most 1 - confidence
  of the time.
  improved / regressed: adjusted p < 1 - confidence and |change| >= --noise-floor;
  no significant change (equivalence): the WHOLE interval [low, high] lies inside ±--resolution
  (on the log scale: -res/(1+res) <= low, high <= res), so a narrow interval off centre is not;
  not enough repeats (need >= N): anything else; N repeats per session would decide it at the
  observed change and spread (the interval inside ±--resolution, or a change of at least the
  floor significant), not enough sessions (need >= K a side): no number of repeats would.
  between sessions (a new process, minutes later: what repeats cannot see): the spread that
  `bench calibrate` stored for this host and workload is added to every interval (the headline
  names it); several sessions a side also count their own spread; one session a side and no
  calibration assume a session CV of {DEFAULT_SESSION_CV:.0%} (what the 1x H200 measured; --session-cv), said in the
  headline. bench ab needs none of this: drift hits both arms of a cycle alike.
  A trend within a session (warm-up, clocks, another tenant) is reported."""


def add_judging_arguments(parser: argparse.ArgumentParser) -> None:
    """How ``bench compare`` and ``bench ab`` judge a change (the method is the help's epilog)."""
    parser.epilog = JUDGING
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--confidence",
        type=number("a confidence", above=0),
        default=0.95,
        help="of the intervals and the verdicts, 0.5-0.999 (default 0.95)",
    )
    parser.add_argument(
        "--noise-floor",
        type=number("a noise floor", least=0),
        default=0.05,
        help="smallest relative change that counts, 0-0.5 (default 0.05)",
    )
    parser.add_argument(
        "--resolution",
        type=number("a resolution", above=0),
        default=0.10,
        help="'no significant change' needs the whole interval inside ±this, 0.01-1 (default 0.10); else 'not enough repeats'",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit 3 when output tok/s regressed significantly at any level"
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    settings = Settings(
        confidence=args.confidence,
        noise_floor=args.noise_floor,
        resolution=args.resolution,
        session_cv=getattr(args, "session_cv", None),
    )
    problem = check_settings(settings)
    if problem:
        raise UsageError(problem)
    return settings


class _WordsParser(argparse.ArgumentParser):
    """Reads ``/bench inference`` options; a mistake is a one-line :class:`UsageError`, never an exit."""

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"bench inference: {message}")


def inference_run(words: Sequence[str]) -> InferenceRun:
    """The typed run for ``bench inference`` options given as words (``--base-url URL --model M ...``)."""
    parser = _WordsParser(prog="bench inference", add_help=False)
    add_inference_arguments(parser)
    return inference_run_from_args(parser.parse_args(list(words)))


__all__ = [
    "API_KEY_NOTE",
    "JUDGING",
    "add_inference_arguments",
    "add_judging_arguments",
    "add_load_arguments",
    "inference_run",
    "inference_run_from_args",
    "load_spec",
    "settings_from_args",
]
