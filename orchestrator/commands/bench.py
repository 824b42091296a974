"""Benchmarks that close the loop: P2P copies, NCCL all-reduce, inference load, comparing runs, and A/B of fixes.

Examples:
  rigaudit bench p2p --yes --json p2p.json              every GPU pair: one way, both ways, staged, data check
  rigaudit bench nccl --sizes 1M,16M,256M,1G --yes      all-reduce algbw/busbw and NCCL's transport
  rigaudit bench inference --base-url http://127.0.0.1:30000 --model M --concurrency 1,4,16 --repeat 5 --json base.json
  rigaudit bench inference ... --slo ttft_ms=200 --slo tpot_ms=50   goodput under your objectives
  rigaudit bench inference --command 'python -m sglang.bench_serving --backend sglang ...' --json base.json
  rigaudit bench inference --base-url URL --model M --concurrency 1 --profile --config /models/M/ --yes --report system-improve.md
  rigaudit bench calibrate --base-url URL --model M --concurrency 1,4 --repeat 5 --sessions 8 --yes
  rigaudit bench compare base.json after.json --report system-improve.md --fail-on-regression
  rigaudit bench compare base1.json base2.json base3.json --against new1.json new2.json new3.json
  rigaudit bench ab --plan audit.json --only numa.balancing --base-url URL --model M --cycles 6 --yes
  rigaudit bench ab --arm base='systemctl restart vllm' --arm fix='./launch-fixed.sh' --base-url URL --model M --yes

Every run that loads GPUs or a server is approved first, like an apply step (--yes for scripts;
without a terminal and without --yes nothing runs). The P2P result is also saved to
/var/tmp/rigaudit/p2p.json, where the audit's p2p.bandwidth check reads it.

How compare and ab judge (repeats and sessions are the units): each repeat's figure per level
(output tok/s, the headline; TTFT and ITL medians) counts once. A new session adds noise that
repeats inside one session cannot see (a new process, new connections, the server's state): compare
adds it to every interval, from a calibration of this host and workload (bench calibrate), from the
sessions compared when a side has several, or else from a conservative default said in the headline.
The change is the ratio of geometric means with a t interval on the log scale (ab: a paired t
interval over its cycles, where drift hits both arms alike); the p-values of every level and metric
shown are adjusted together with Holm's weighted step-down procedure (output tok/s carries 2/3 of
each level's weight), so identical configurations are called different at most 1 - confidence of
the time. A change counts when its adjusted p is below 1 - confidence and it is
at least --noise-floor; "no significant change" needs the whole interval inside ±--resolution (an
equivalence test), otherwise the verdict is "not enough repeats" with the number per side that the
observed change and spread need to decide it by the test applied (a significant change at its share
of Holm's alpha: the more levels, metrics and arms, the more repeats). A
trend over a session (warm-up, clocks, another tenant) is reported; inference runs its levels in a
balanced (Williams Latin square) order and ab its arms, so time is not mistaken for an effect.
compare refuses results of different workloads (model, URL, API, max/prompt tokens, levels,
requests per run, tool version) unless --allow-different.
A result records the GPUs of the machine the load came from (name, a digest of the UUID, driver,
clocks and power limit, read at the start, never set) and a digest of its samples; compare refuses
results of different GPUs (unless --allow-different), and always a file whose samples do not match
its digest, whose summary does not follow from its samples, or that names no host.

ab --arm NAME='CMD' (twice or more) takes arms that restart the server: the server is restarted
as the visit's arm before every visit, awaited until it streams a token (--ready-timeout), and left
as the first arm (or --end-on) at the end, after a failed start and after Ctrl-C.

Exit status: 0 done; 1 the benchmark failed, found corrupt data, or (ab) a switch failed and was
rolled back (or the server could not be restarted as found); 2 usage error, torch/GPUs missing,
a --base-url that takes no load (checked by one request, 10 s at most, before anything is asked or
sent: nothing listens there, no answer, a key refused, or a URL that names the endpoint itself),
or (compare) different workloads; 3 not approved, or with --fail-on-regression a significant
regression of output tok/s; 130 interrupted (ab rolls back first).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from rigaudit.orchestrator.bench.compare import CalibrationRun, CompareRun, compare_runs, list_calibrations, run_calibration
from rigaudit.orchestrator.bench.run import (
    MEASURES_HERE,
    AbBench,
    Approve,
    NcclRun,
    Outputs,
    P2PRun,
    RestartBench,
    regression_warning,
    run_ab_bench,
    run_inference,
    run_nccl,
    run_p2p,
    run_restart_bench,
)
from rigaudit.orchestrator.change.approval import require_approval
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._arguments import number, positive_seconds
from rigaudit.orchestrator.commands._bench import (
    API_KEY_NOTE,
    add_inference_arguments,
    add_judging_arguments,
    add_load_arguments,
    inference_run_from_args,
    load_spec,
    settings_from_args,
)
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.identity import this_machine
from rigaudit.orchestrator.report.document import check_report, report_host
from rigaudit.orchestrator.report.output import check_writable
from rigaudit.orchestrator.session.core import Session, open_session
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.bench.compare import Settings
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.p2p_file import DEFAULT_PATH
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.outputs import Kind

Run = Callable[[argparse.Namespace, Session], int]


def _outputs(args: argparse.Namespace) -> Outputs:
    """Where the result goes, checked before anything runs: the files can be written, and a P2P or NCCL
    result is appended only to this machine's report."""
    json_path = Path(args.json) if args.json else None
    report = Path(args.report) if args.report else None
    if json_path is not None:
        check_writable(json_path, "--json")
    if report is not None:
        if args.bench_kind in MEASURES_HERE:
            check_report(report, this_machine())
        else:
            check_writable(report, "--report")
            report_host(report)  # refuses a file that is not a rigaudit report
    return Outputs(json=json_path, report=report)


def _approve(args: argparse.Namespace, session: Session) -> Approve:
    def approve(what: str, details: Sequence[str]) -> None:
        require_approval(what, details, assume_yes=bool(args.yes), emit=session.emit)

    return approve


def _common(parser: argparse.ArgumentParser, *, gated: bool = True) -> None:
    json_help = "write the result as JSON (no FILE or '-': stdout)"
    output(parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help=json_help), stdout=True)
    output(parser.add_argument("--report", metavar="FILE", help="append the result to this system-improve.md"))
    if gated:
        parser.add_argument("--yes", action="store_true", help="approve the run without asking (scripts)")
    add_session_arguments(parser)


# --- p2p -------------------------------------------------------------------------------------------


def _p2p(args: argparse.Namespace, session: Session) -> int:
    run = P2PRun(
        gpus=args.gpus,
        size_mib=args.size_mib,
        iters=args.iters,
        warmup=args.warmup,
        backend=args.backend,
        save_to=Path(args.save_to),
    )
    report = run_p2p(run, approve=_approve(args, session), emit=session.emit, outputs=_outputs(args))
    return 1 if any(not pair.data_ok for pair in report.pairs) else 0


def _add_p2p(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", help="GPU indices, e.g. 0,1 (default: all visible)")
    parser.add_argument("--size-mib", type=int, default=256, help="bytes per copy, MiB (default 256)")
    parser.add_argument("--iters", type=int, default=20, help="timed iterations per measurement (default 20; the median counts)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed copies first (default 3)")
    parser.add_argument("--backend", choices=("torch", "cuda-bindings"), help="default: torch if installed, else cuda-bindings")
    output(parser.add_argument("--save-to", default=str(DEFAULT_PATH), help="where the audit reads the result"))
    _common(parser)


# --- nccl ------------------------------------------------------------------------------------------


def _nccl(args: argparse.Namespace, session: Session) -> int:
    run = NcclRun(gpus=args.gpus, sizes=args.sizes, iters=args.iters, warmup=args.warmup, tool=args.tool)
    report = run_nccl(run, approve=_approve(args, session), emit=session.emit, outputs=_outputs(args))
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


def _inference(args: argparse.Namespace, session: Session) -> int:
    from rigaudit.orchestrator.bench.explain import run_profile
    from rigaudit.orchestrator.commands._profile import profile_options_from_args, stray_profile_options

    if args.profile:
        if args.sessions != 1:
            raise UsageError("--profile times one session: it does not go with --sessions")
        if args.command:
            raise UsageError("--profile times rigaudit's own load: it does not go with --command")
        spec, options = load_spec(args), profile_options_from_args(args)
        approve, outputs = _approve(args, session), _outputs(args)
        result, _ = anyio.run(lambda: run_profile(spec, options, approve=approve, emit=session.emit, outputs=outputs))
    else:
        if stray := stray_profile_options(args):
            raise UsageError(f"{', '.join(stray)} describe a profile: add --profile")
        run = inference_run_from_args(args)
        if args.sessions != 1:
            from rigaudit.orchestrator.bench.sessions import run_inference_sessions

            if run.spec is None:
                raise UsageError("--sessions runs rigaudit's own load: it does not go with --command")
            approve, outputs = _approve(args, session), _outputs(args)
            results = run_inference_sessions(
                run.spec, args.sessions, args.gap_s, approve=approve, emit=session.emit, outputs=outputs
            )
            return 1 if any(r.runs and all(x.requests_ok == 0 for x in r.runs) for r in results) else 0
        result = anyio.run(lambda: run_inference(run, approve=_approve(args, session), emit=session.emit, outputs=_outputs(args)))
    return 1 if result.runs and all(r.requests_ok == 0 for r in result.runs) else 0


def _add_inference(parser: argparse.ArgumentParser) -> None:
    from rigaudit.orchestrator.commands._profile import add_profile_arguments

    add_inference_arguments(parser)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also sample the serving GPUs through NVML and split the time per output token into streaming, "
        "communication, GPU idle and the remainder (see `rigaudit explain --help`)",
    )
    add_profile_arguments(parser)
    _common(parser)


# --- compare ---------------------------------------------------------------------------------------


def _regressed(session: Session, regressions: Sequence[object], args: argparse.Namespace) -> int:
    """3 with --fail-on-regression when output tok/s regressed significantly at some level, else 0."""
    warning = regression_warning(regressions) if args.fail_on_regression else None
    if warning is None:
        return 0
    session.emit(warning)
    return 3


def _sides(args: argparse.Namespace) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(baseline files, new files): ``A B``, or ``A1 A2 ... --against B1 B2 ...``."""
    if args.against:
        return tuple(map(Path, args.files)), tuple(map(Path, args.against))
    if len(args.files) != 2:
        raise UsageError(
            "bench compare takes BASE.json NEW.json, or several sessions a side: "
            "BASE1.json BASE2.json ... --against NEW1.json NEW2.json ..."
        )
    return (Path(args.files[0]),), (Path(args.files[1]),)


def _compare(args: argparse.Namespace, session: Session) -> int:
    base, new = _sides(args)
    both = {p.resolve() for p in base} & {p.resolve() for p in new}
    if both:
        raise UsageError(f"bench compare: {min(both)} is one file given twice, as baseline and as new")
    if args.calibration and args.no_calibration:
        raise UsageError("--calibration FILE and --no-calibration contradict each other")
    run = CompareRun(
        base=base,
        new=new,
        settings=settings_from_args(args),
        allow_different=args.allow_different,
        calibration=Path(args.calibration) if args.calibration else None,
        use_stored=not args.no_calibration,
    )
    result = compare_runs(run, emit=session.emit, outputs=_outputs(args))
    return _regressed(session, [f"concurrency {lv.concurrency}" for lv in result.regressions()], args)


def _add_session_noise(parser: argparse.ArgumentParser) -> None:
    from rigaudit.tools.bench.compare import DEFAULT_SESSION_CV

    group = parser.add_argument_group("between sessions (what repeats inside one session cannot see)")
    group.add_argument(
        "--calibration",
        metavar="FILE",
        help="the calibration to use (default: the one bench calibrate stored for this host and workload)",
    )
    group.add_argument("--no-calibration", action="store_true", help="ignore stored calibrations")
    group.add_argument(
        "--session-cv",
        type=number("a spread", least=0),
        metavar="CV",
        help="assume this spread between sessions, 0-1 (over any calibration; 0: none, repeats are the only noise); "
        f"without it and without a calibration, one session a side assumes {DEFAULT_SESSION_CV:.2f}",
    )


def _add_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="BASE.json NEW.json, or the baseline's sessions (with --against)"
    )
    parser.add_argument(
        "--against", nargs="+", metavar="FILE", help="the new run's sessions (then FILE... are the baseline's sessions)"
    )
    parser.add_argument(
        "--allow-different",
        action="store_true",
        help="compare results of different workloads (model, URL, API, tokens, levels, requests, tool, host) anyway, "
        "listing the differences",
    )
    _add_session_noise(parser)
    add_judging_arguments(parser)
    _common(parser, gated=False)


# --- calibrate -------------------------------------------------------------------------------------


def _calibrate(args: argparse.Namespace, session: Session) -> int:
    if args.list:
        list_calibrations(emit=session.emit, outputs=_outputs(args))
        return 0
    if args.files and args.base_url:
        raise UsageError("bench calibrate reads result files or runs sessions (--base-url), not both")
    run = CalibrationRun(
        files=tuple(map(Path, args.files)),
        spec=load_spec(args, "bench calibrate") if not args.files else None,
        sessions=args.sessions,
        gap_s=args.gap_s,
        keep=Path(args.keep) if args.keep else None,
        save=not args.no_save,
        settings=settings_from_args(args),
    )
    run_calibration(run, approve=_approve(args, session), emit=session.emit, outputs=_outputs(args))
    return 0


CALIBRATE_HELP = """how it measures (see docs/validation/bench-stats.md):
  K identical sessions of one load (each in a fresh process, as a before and an after run are),
  or K result files of one configuration; per level and metric a one-way ANOVA of the sessions
  splits the noise into what repeats see (within a session) and what only a new session sees
  (between sessions). bench compare of this host and workload then judges one session a side with
  the variance of the calibration's session means (K - 1 degrees of freedom), pooled with the
  sessions compared when a side has several. Stored as $XDG_STATE_HOME/rigaudit/calibrations/KEY.json
  (KEY: the machine the load came from, by a digest of its /etc/machine-id (never the id itself),
  so containers or clones of one name keep apart and a renamed host keeps its own; inside a
  container, the container too, by a digest of its engine's id, as containers of one image share
  its machine-id; model, URL, API, tokens, levels, requests per run, tool version; newest wins).
  A container whose id cannot be read is known by the kernel's boot id (until a reboot, and like
  any container of its image on that host), said in a warning; --calibration FILE always names
  one. Without a machine-id, the host name keys it, said in a warning; a calibration stored by
  host name before still reads, and
  moves to the machine's key when a result with a machine-id finds it."""


def _add_calibrate(parser: argparse.ArgumentParser) -> None:
    parser.epilog = CALIBRATE_HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="results of one configuration, one session each (instead of running)"
    )
    add_load_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5, help="repeats per session (default 5: as you will compare)")
    parser.add_argument("--sessions", type=int, default=8, help="sessions to run, 2-100 (default 8; more narrow the intervals)")
    parser.add_argument("--gap-s", type=number("a gap", least=0), default=0.0, help="seconds between sessions (default 0)")
    output(parser.add_argument("--keep", metavar="DIR", help="write each session's result to DIR/session-NN.json"), Kind.FOLDER)
    parser.add_argument("--no-save", action="store_true", help="do not store it where bench compare looks")
    parser.add_argument("--list", action="store_true", help="list the stored calibrations and exit")
    parser.add_argument(
        "--confidence", type=number("a confidence", above=0), default=0.95, help="of the figures shown (default 0.95)"
    )
    parser.add_argument(
        "--resolution",
        type=number("a resolution", above=0),
        default=0.10,
        help="for 'sessions a side for ±resolution' (default 0.10)",
    )
    parser.set_defaults(noise_floor=0.05, order="balanced")
    _common(parser)


# --- ab --------------------------------------------------------------------------------------------


def _ab(args: argparse.Namespace, session: Session) -> int:
    from rigaudit.tools.actions.journal import default_journal_path

    settings = settings_from_args(args)
    spec = load_spec(args, "bench ab")
    if args.arm:
        return _ab_restart(args, session, settings, spec)
    if args.end_on is not None and args.plan is None:
        raise UsageError("--end-on names an --arm: it goes with arms that restart the server")
    if args.plan is None:
        raise UsageError("bench ab needs --plan FILE (from `rigaudit audit --json FILE`)")
    bench = AbBench(
        plan=Path(args.plan),
        only=tuple(s.strip() for s in (args.only or "").split(",") if s.strip()),
        spec=spec,
        settings=settings,
        journal=Path(args.journal) if args.journal else default_journal_path(),
        snapshot=Path(args.snapshot) if args.snapshot else None,
        into=Path(args.into) if args.into else None,
        cycles=args.cycles,
        settle=args.settle,
        together=args.together,
        assume_yes=args.yes,
        ready_timeout_s=args.ready_timeout,
        end_on=args.end_on,
    )
    done = run_ab_bench(bench, emit=session.emit, outputs=_outputs(args))
    if done.interrupted:
        return 130
    if done.failed:
        return 1
    return _regressed(session, done.regressions, args)


def _ab_restart(args: argparse.Namespace, session: Session, settings: Settings, spec: LoadSpec) -> int:
    from rigaudit.tools.actions.journal import default_journal_path
    from rigaudit.tools.bench.restart import parse_arms

    if args.plan or args.only or args.snapshot or args.into or args.together:
        raise UsageError("--arm defines the arms by commands: it does not go with --plan/--only/--snapshot/--together")
    bench = RestartBench(
        arms=tuple(parse_arms(args.arm)),
        spec=spec,
        settings=settings,
        journal=Path(args.journal) if args.journal else default_journal_path(),
        cycles=args.cycles,
        settle=args.settle,
        ready_timeout_s=args.ready_timeout,
        end_on=args.end_on,
        assume_yes=args.yes,
    )
    done = run_restart_bench(bench, emit=session.emit, outputs=_outputs(args))
    if done.interrupted:
        return 130
    if done.failed:
        return 1
    return _regressed(session, done.regressions, args)


def _add_ab(parser: argparse.ArgumentParser) -> None:
    from rigaudit.orchestrator.bench.ab import MAX_CYCLES, MAX_SETTLE

    parser.add_argument("--plan", metavar="FILE", help="the plan from `rigaudit audit --json FILE`")
    parser.add_argument("--only", metavar="STEP,...", help="the runtime steps to switch on and off (required)")
    where = parser.add_argument_group("where (default: this machine)")
    where.add_argument("--snapshot", metavar="SRC", help="a snapshot to copy and switch (needs --into)")
    output(where.add_argument("--into", metavar="DST", help="the new copy of --snapshot that is changed"), Kind.NEW_FOLDER)
    parser.add_argument(
        "--cycles",
        type=int,
        default=6,
        help=f"visits of every arm, 2-{MAX_CYCLES} (default 6; each visit runs every level once)",
    )
    parser.add_argument("--settle", type=int, default=1, help=f"untimed requests before every visit, 0-{MAX_SETTLE} (default 1)")
    parser.add_argument("--together", action="store_true", help="with several steps, measure only all of them together")
    restart = parser.add_argument_group(
        "arms that restart the server (instead of --plan/--only; a restart step of --plan derives them when it can)"
    )
    restart.add_argument(
        "--arm",
        action="append",
        metavar="NAME=CMD",
        help="an arm by the command that (re)starts the server as that arm (repeat; the first is the baseline, as the "
        "server runs now): e.g. --arm base='systemctl restart vllm' --arm fix='systemctl restart vllm-fixed'",
    )
    restart.add_argument(
        "--ready-timeout",
        type=positive_seconds,
        default=300.0,
        help="seconds a restart may take until the server streams its first token (default 300)",
    )
    restart.add_argument(
        "--end-on", metavar="NAME", help="the arm to leave the server as (default: the first, as found; base or fix for a step)"
    )
    output(parser.add_argument("--journal", metavar="FILE", help="where to journal the switches (default: state dir)"))
    add_load_arguments(parser)
    add_judging_arguments(parser)
    _common(parser)


_KINDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Run]] = {
    "p2p": ("peer-copy bandwidth and data check for every GPU pair", _add_p2p, _p2p),
    "nccl": ("NCCL all-reduce algbw/busbw and transport", _add_nccl, _nccl),
    "inference": ("streaming load on an OpenAI-compatible server: TTFT, ITL, tok/s", _add_inference, _inference),
    "compare": (
        "compare inference results (one session or several a side), repeats and sessions as units, Holm-adjusted",
        _add_compare,
        _compare,
    ),
    "calibrate": (
        "measure the noise between sessions of one workload on this host, for bench compare",
        _add_calibrate,
        _calibrate,
    ),
    "ab": ("interleaved A/B of runtime fixes: apply and roll back steps between repeats", _add_ab, _ab),
}


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_kind", metavar="KIND", required=True)
    for name, (help_text, add, run) in _KINDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        add(child)
        child.set_defaults(_bench_run=run)


def _run(args: argparse.Namespace) -> int:
    if vars(args).get("api_key") is not None:
        print(API_KEY_NOTE, file=sys.stderr)
    options = {k: v for k, v in vars(args).items() if not k.startswith("_") and isinstance(v, (str, int, float, bool))}
    with open_session(
        "bench",
        consumers=[terminal_for(screen(args))],
        transcript=args.transcript,
        record=not args.no_transcript,
        options=options,
    ) as session:
        run: Run = args._bench_run
        session.exit_code = run(args, session)
    sys.stdout.flush()
    return session.exit_code


COMMAND = Command("bench", "benchmarks: P2P, NCCL all-reduce, inference load, compare", _add, _run, __doc__ or "")
