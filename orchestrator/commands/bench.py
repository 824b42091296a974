"""Benchmarks that close the loop: P2P copies, NCCL all-reduce, inference load, and comparing two runs.

Examples:
  rigaudit bench p2p --yes --json p2p.json              every GPU pair: one way, both ways, staged, data check
  rigaudit bench nccl --sizes 1M,16M,256M,1G --yes      all-reduce algbw/busbw and NCCL's transport
  rigaudit bench inference --base-url http://127.0.0.1:30000 --model M --concurrency 1,4,16 --repeat 3 --json base.json
  rigaudit bench inference --command 'python -m sglang.bench_serving --backend sglang ...' --json base.json
  rigaudit bench compare base.json after.json --report system-improve.md

Every run that loads GPUs or a server is approved first, like an apply step (--yes for scripts;
without a terminal and without --yes nothing runs). The P2P result is also saved to
/var/tmp/rigaudit/p2p.json, where the audit's p2p.bandwidth check reads it.

Exit status: 0 done; 1 the benchmark failed, or found corrupt data; 2 usage error, or torch/GPUs
missing; 3 not approved.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.errors import OperationError, UsageError
from rigaudit.tools.bench.errors import BenchFailed, BenchInputError, BenchUnavailable
from rigaudit.tools.bench.render import Table as Rows

T = TypeVar("T")


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{what} wants numbers like 1,4,16, not {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} wants positive numbers, not {text!r}")
    return values


def guarded(work: Callable[[], T]) -> T:
    """Run benchmark code, turning its errors into the CLI's one-line errors."""
    try:
        return work()
    except (BenchUnavailable, BenchInputError) as exc:
        raise UsageError(str(exc)) from None
    except BenchFailed as exc:
        raise OperationError(str(exc)) from None


def _out(args: argparse.Namespace) -> Console:
    """Human output: stdout, or stderr when JSON goes to stdout."""
    stderr = getattr(args, "json", None) == "-"
    console = Console(stderr=stderr, highlight=False)
    return console if console.is_terminal else Console(stderr=stderr, highlight=False, width=200)


def show(console: Console, rows: Rows, title: str) -> None:
    headers, body = rows
    table = Table(title=title, title_justify="left")
    for header in headers:
        table.add_column(header)
    for row in body:
        table.add_row(*row)
    console.print(table)


@contextmanager
def progress_bar(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A callback for tools/bench progress: a rich bar on a terminal, nothing otherwise."""
    if not console.is_terminal:
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as bar:

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        yield update


def approve(what: str, details: Sequence[str], args: argparse.Namespace) -> None:
    from rigaudit.orchestrator.approval import require_approval

    session = getattr(args, "_session", None)
    require_approval(what, details, assume_yes=bool(args.yes), emit=session.emit if session is not None else None)


def write_outputs(args: argparse.Namespace, text: str, title: str, markdown: str) -> None:
    from rigaudit.orchestrator.output import write_json

    session = getattr(args, "_session", None)
    if session is not None:
        import json

        from rigaudit.transcripts.events import BenchResultReported

        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        session.emit(BenchResultReported(kind=str(args.bench_kind), summary=title, data=data if isinstance(data, dict) else {}))
    if getattr(args, "json", None):
        write_json(Path(args.json), text)
    if getattr(args, "report", None):
        from rigaudit.orchestrator.report import append_section

        try:
            append_section(Path(args.report), title, markdown)
        except OSError as exc:
            raise UsageError(f"cannot write {args.report}: {exc.strerror or exc}") from None


def _common(parser: argparse.ArgumentParser, *, gated: bool = True) -> None:
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the result as JSON (no FILE or '-': stdout)")
    parser.add_argument("--report", metavar="FILE", help="append the result to this system-improve.md")
    if gated:
        parser.add_argument("--yes", action="store_true", help="approve the run without asking (scripts)")
    parser.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)")
    parser.add_argument("--no-transcript", action="store_true", help="do not record this session")


# --- p2p -------------------------------------------------------------------------------------------


def _p2p(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench import p2p
    from rigaudit.tools.bench.gpu import parse_gpu_list, pick_backend
    from rigaudit.tools.bench.render import p2p_table, section

    backend = guarded(lambda: pick_backend(args.backend))
    gpus = guarded(lambda: parse_gpu_list(args.gpus))
    if args.size_mib <= 0 or args.iters <= 0:
        raise UsageError("--size-mib and --iters must be positive")
    which = "GPUs " + ",".join(map(str, gpus)) if gpus else "every visible GPU"
    approve(
        "run the P2P micro-benchmark",
        [
            f"copy {args.size_mib} MiB between every ordered pair of {which} through {backend}: one way, both ways, "
            f"and staged through pinned host memory, {args.iters} timed iterations each after {args.warmup} warm-up",
            "the GPUs' copy engines and links run flat out for a few seconds per pair: serving traffic on them will stall",
        ],
        args,
    )
    console = _out(args)
    with progress_bar(console) as progress:
        report = guarded(
            lambda: p2p.measure(backend, gpus, size_mib=args.size_mib, iters=args.iters, warmup=args.warmup, progress=progress)
        )
    show(console, p2p_table(report), f"P2P copies, {args.size_mib} MiB ({backend})")
    for gpu in report.gpus:
        console.print(f"GPU{gpu.index}: {gpu.name} at {gpu.pci_bus_id or 'unknown bus'}")
    warning = p2p.save_for_audit(report, Path(args.save_to))
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    write_outputs(args, report.to_json(), "Validation", section(f"P2P micro-benchmark ({report.taken_at})", p2p_table(report)))
    if any(not pair.data_ok for pair in report.pairs):
        console.print("[red]data corrupted in a peer copy: P2P is unsafe on this host (IOMMU/ACS?), whatever its speed[/]")
        return 1
    return 0


def _add_p2p(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", help="GPU indices, e.g. 0,1 (default: all visible)")
    parser.add_argument("--size-mib", type=int, default=256, help="bytes per copy, MiB (default 256)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per measurement (default 20; the median counts)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed copies first (default 3)")
    parser.add_argument("--backend", choices=("torch", "cuda-bindings"), help="default: torch if installed, else cuda-bindings")
    parser.add_argument("--save-to", default=str(Path("/var/tmp/rigaudit/p2p.json")), help="where the audit reads the result")
    _common(parser)


# --- nccl ------------------------------------------------------------------------------------------


def _nccl(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.nccl import run_allreduce
    from rigaudit.tools.bench.nccl_parse import human_size, parse_sizes
    from rigaudit.tools.bench.render import nccl_table, section

    sizes = guarded(lambda: parse_sizes(args.sizes))
    if args.gpus is not None and args.gpus < 2:
        raise UsageError("--gpus: the all-reduce needs at least 2 GPUs")
    approve(
        "run the NCCL all-reduce benchmark",
        [
            f"all-reduce {', '.join(human_size(s) for s in sizes)} over {args.gpus or 'all visible'} GPUs "
            f"({args.tool}), {args.iters} timed iterations per size; NCCL_NVLS_ENABLE=0 is forced",
            "the GPUs and their links run flat out while it runs: serving traffic on them will stall",
        ],
        args,
    )
    console = _out(args)
    with progress_bar(console) as progress:
        report = guarded(
            lambda: run_allreduce(args.tool, args.gpus, sizes, iters=args.iters, warmup=args.warmup, progress=progress)
        )
    show(console, nccl_table(report), f"NCCL all-reduce over {report.world_size} GPUs ({report.tool})")
    notes = [
        f"NCCL {report.nccl_version or '?'}; transport: {report.transport or 'unknown'} "
        f"({', '.join(f'{k} x{v}' for k, v in report.transports.items()) or 'no INFO transport lines'})",
        "busbw = algbw × 2(n−1)/n; about 80% of the link's one-way peak is healthy",
    ]
    for note in notes:
        console.print(note)
    markdown = section(f"NCCL all-reduce ({report.taken_at})", nccl_table(report), notes)
    write_outputs(args, report.to_json(), "Validation", markdown)
    return 1 if any(r.data_ok is False for r in report.rows) else 0


def _add_nccl(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, help="number of GPUs (ranks), default: all visible")
    parser.add_argument("--sizes", default="1M,16M,256M,1G", help="message sizes (default 1M,16M,256M,1G)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per size (default 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations per size (default 5)")
    parser.add_argument(
        "--tool",
        choices=("auto", "torch", "nccl-tests"),
        default="auto",
        help="auto: nccl-tests' all_reduce_perf when on PATH, else torch.distributed",
    )
    _common(parser)


# --- inference -------------------------------------------------------------------------------------


def _inference(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.render import bench_table, section
    from rigaudit.tools.bench.results import BenchResult

    console = _out(args)
    result: BenchResult
    if args.command:
        from rigaudit.tools.bench.external import run_command

        approve("run an external serving benchmark", [f"command: {args.command}", "it sends load to the server it names"], args)
        result = guarded(
            lambda: run_command(
                args.command,
                base_url=args.base_url,
                model=args.model,
                on_line=lambda line: console.print(line, markup=False, highlight=False),
            )
        )
    else:
        if not args.base_url or not args.model:
            raise UsageError("bench inference needs --base-url and --model (or --command)")
        result = _load(args, console)
    show(console, bench_table(result), f"Inference benchmark: {result.model or '?'} at {result.base_url or '?'}")
    errors = sorted({s.error.split(":")[0] for r in result.runs for s in r.samples if s.error})
    if errors:
        console.print(f"[yellow]failed requests:[/] {', '.join(errors)}")
    write_outputs(
        args, result.to_json(), "Validation", section(f"Inference benchmark ({result.started_at})", bench_table(result))
    )
    return 1 if result.runs and all(r.requests_ok == 0 for r in result.runs) else 0


def _load(args: argparse.Namespace, console: Console) -> Any:
    import anyio

    from rigaudit.tools.bench.loadgen import LoadSpec, run_load

    spec = LoadSpec(
        base_url=args.base_url,
        model=args.model,
        api=args.api,
        concurrency=_ints(args.concurrency, "--concurrency"),
        requests=args.requests,
        max_tokens=args.max_tokens,
        prompt_tokens=args.prompt_tokens,
        repeat=args.repeat,
        warmup=args.warmup,
        ignore_eos=not args.no_ignore_eos,
        api_key=args.api_key,
        timeout_s=args.timeout,
    )
    if min(spec.max_tokens, spec.prompt_tokens, spec.repeat) <= 0 or spec.warmup < 0 or (spec.requests or 1) <= 0:
        raise UsageError("--max-tokens, --prompt-tokens, --repeat and --requests must be positive")
    total = sum(spec.requests_for(c) for c in spec.concurrency) * spec.repeat + spec.warmup
    approve(
        f"send {total} streaming requests to {spec.base_url}",
        [
            f"model {spec.model}, {spec.api} API, concurrency {','.join(map(str, spec.concurrency))}, {spec.repeat} repeat(s), "
            f"{spec.prompt_tokens} prompt / {spec.max_tokens} output tokens each",
            "a production server serves these requests alongside its real traffic",
        ],
        args,
    )
    with progress_bar(console) as progress:
        return anyio.run(run_load, spec, progress)


def _add_inference(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="the server, e.g. http://127.0.0.1:30000 (with or without /v1)")
    parser.add_argument("--model", help="model name as the server knows it")
    parser.add_argument("--api", choices=("chat", "completions"), default="chat")
    parser.add_argument("--concurrency", default="1,4,16", help="levels, e.g. 1,4,16 (default)")
    parser.add_argument("--requests", type=int, help="requests per level and repeat (default: 4 per slot, at least 8)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=1, help="run every level K times (3 gives compare a spread)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests before the first level (default 2)")
    parser.add_argument("--no-ignore-eos", action="store_true", help="do not send ignore_eos (for servers that reject it)")
    parser.add_argument("--api-key", help="bearer token, if the server wants one")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-request timeout, s")
    parser.add_argument("--command", help="run this external benchmark instead and parse its summary (sglang, vLLM)")
    _common(parser)


# --- compare ---------------------------------------------------------------------------------------


def _compare(args: argparse.Namespace) -> int:
    from rigaudit.tools.bench.compare import compare
    from rigaudit.tools.bench.render import compare_table, section
    from rigaudit.tools.bench.results import load_result

    base = guarded(lambda: load_result(Path(args.base)))
    new = guarded(lambda: load_result(Path(args.new)))
    if not 0 <= args.noise_floor < 1:
        raise UsageError("--noise-floor is a fraction, e.g. 0.05")
    result = compare(base, new, seed=args.seed, resamples=args.resamples, noise_floor=args.noise_floor)
    console = _out(args)
    show(console, compare_table(result), f"{args.base} → {args.new}")
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    notes = [
        f"95% bootstrap intervals (repeats, then requests; seed {args.seed}); a change counts when its interval "
        f"excludes 0 and it exceeds {args.noise_floor:.0%}",
        *result.warnings,
    ]
    write_outputs(
        args,
        json.dumps(result.to_dict(), indent=2),
        "Benchmark comparison",
        section(f"{Path(args.base).name} → {Path(args.new).name}", compare_table(result), notes),
    )
    return 0


def _add_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="baseline rigaudit.bench/1 JSON")
    parser.add_argument("new", help="the run after the change")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0: the same files give the same answer)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--noise-floor", type=float, default=0.05, help="smallest relative change that counts (default 0.05)")
    _common(parser, gated=False)


_KINDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "p2p": ("peer-copy bandwidth and data check for every GPU pair", _add_p2p, _p2p),
    "nccl": ("NCCL all-reduce algbw/busbw and transport", _add_nccl, _nccl),
    "inference": ("streaming load on an OpenAI-compatible server: TTFT, ITL, tok/s", _add_inference, _inference),
    "compare": ("compare two inference results with bootstrap intervals", _add_compare, _compare),
}


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_kind", metavar="KIND", required=True)
    for name, (help_text, add, run) in _KINDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        add(child)
        child.set_defaults(_bench_run=run)


def _run(args: argparse.Namespace) -> int:
    from rigaudit.orchestrator.session import open_session

    options = {k: v for k, v in vars(args).items() if not k.startswith("_") and isinstance(v, (str, int, float, bool))}
    with open_session(
        "bench", consumers=[], transcript=args.transcript, record=not args.no_transcript, options=options
    ) as session:
        args._session = session
        code: int = args._bench_run(args)
        session.exit_code = code
    sys.stdout.flush()
    return code


COMMAND = Command("bench", "benchmarks: P2P, NCCL all-reduce, inference load, compare", _add, _run, __doc__ or "")
