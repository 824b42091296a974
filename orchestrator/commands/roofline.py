"""The single-stream decode roofline: the most tokens/s any system can give one request, as a range.

time per token >= bytes per token / (GPUs x bandwidth) + layers x all-reduces x latency. A token
reads every active weight once, each in its own format (from the checkpoint's config.json and its
quantization config: an NVFP4 export keeps attention and the LM head, often the shared experts,
in BF16), plus the KV cache of its context; under tensor parallelism it waits for two all-reduces
per layer. The bound's high end takes the peak bandwidth and fast all-reduces, its low end 80% of a
data-sheet peak and slow ones; the assumptions are printed with it. Measured / bound is the
efficiency: far below the bound, no PCIe, NUMA or clock fix explains the gap.

Examples:
  rigaudit roofline --params-b 40 --bytes-per-param 1.16 --gpus 8 --gpu-model "RTX PRO 6000" --measured-tok-s 10.34
  rigaudit roofline --params-b 40 --bytes-per-param 1.16 --gpus 8 --gpu-model "RTX PRO 6000" --layers 78 --interconnect pcie
  rigaudit roofline --config /models/GLM-4.6-NVFP4/ --gpu-model "NVIDIA B200" --gpus 8 --nccl nccl.json --context 8192
  rigaudit roofline --params-b 8 --bytes-per-param 2 --measure --gpus 2 --yes

--gpu-model takes the name exactly as nvidia-smi / NVML prints it ("NVIDIA A100-SXM4-80GB") or a
listed short name ("H200", "H100 SXM"); an ambiguous one ("A100") is refused with what it could be.
Parameter counts from a config.json are approximate (norms, biases, the embedding lookup left out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rigaudit.orchestrator.change.apply import load_plan_file
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._arguments import number
from rigaudit.orchestrator.commands._model import add_comm_arguments, add_model_arguments, comm_from_args, spec_from_args
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.plan.text import plan_gain
from rigaudit.orchestrator.report.document import append_section, report_host
from rigaudit.orchestrator.report.output import check_writable
from rigaudit.orchestrator.report.plots import draw_roofline, picture_markdown
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.pictures import roofline_bar
from rigaudit.orchestrator.ui.terminal import terminal_for
from rigaudit.tools.bench.gpu_specs import SPECS, lookup, unknown_message
from rigaudit.tools.bench.render import roofline_lines
from rigaudit.tools.bench.roofline import PEAK_ACHIEVABLE, Roofline
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.schema.events.bench import BenchResultReported
from rigaudit.tools.schema.events.session import ReportWritten
from rigaudit.tools.schema.plan import Plan


def _add(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--context", type=int, default=0, help="context length whose KV cache each token reads (default 0)")
    hw = parser.add_argument_group("the GPUs")
    hw.add_argument("--gpus", type=int, default=1, help="GPUs the model is split over (default 1)")
    source = hw.add_mutually_exclusive_group()
    source.add_argument(
        "--bandwidth-gbs", type=number("a bandwidth", above=0), help="memory bandwidth per GPU that decode achieves, GB/s"
    )
    source.add_argument("--gpu-model", help=f"a GPU by its NVML name, e.g. {', '.join(s.name for s in SPECS[:3])}")
    source.add_argument("--measure", action="store_true", help="measure it: a matrix-vector product on each GPU (torch)")
    add_comm_arguments(parser)
    parser.add_argument(
        "--measured-tok-s",
        type=number("a speed", above=0),
        help="single-stream decode tok/s you measured: prints measured / bound",
    )
    json_help = "write the result as JSON (no FILE or '-': stdout)"
    output(parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help=json_help), stdout=True)
    parser.add_argument(
        "--plan", type=Path, metavar="FILE", help="an `audit --json` result: the bar also says what its plan can buy"
    )
    report_help = "append the roofline (bar as an image and as text) to this report"
    output(parser.add_argument("--report", type=Path, metavar="FILE", help=report_help))
    parser.add_argument("--yes", action="store_true", help="approve --measure without asking")
    add_session_arguments(parser)


def _bandwidth(args: argparse.Namespace) -> tuple[float, str, tuple[float, float]]:
    """(GB/s per GPU, where it comes from, the share of it decode achieves)."""
    if args.bandwidth_gbs is not None:
        if not 0 < args.bandwidth_gbs < 1e6:
            raise UsageError("--bandwidth-gbs must be a positive number of GB/s")
        return args.bandwidth_gbs, "given", (1.0, 1.0)
    if args.gpu_model:
        spec = lookup(args.gpu_model)
        if spec is None:
            raise UsageError(unknown_message(args.gpu_model))
        return spec.bandwidth_gbs, f"{spec.name}, {spec.memory}, data sheet", PEAK_ACHIEVABLE
    if args.measure:
        from rigaudit.orchestrator.change.approval import require_approval
        from rigaudit.tools.bench.membw import READ_HOW, measure_read_bandwidth

        require_approval(
            "measure GPU memory bandwidth",
            [f"a matrix-vector product over 1 GiB of weights, 20 times, on GPUs 0..{args.gpus - 1}"],
            assume_yes=bool(args.yes),
        )
        per_gpu = measure_read_bandwidth(range(args.gpus))
        each = ", ".join(f"{v:,.0f}" for v in per_gpu)
        return min(per_gpu), f"{READ_HOW}; per GPU {each} GB/s, the slowest counts", (1.0, 1.0)
    raise UsageError("say how fast the GPUs' memory is: --bandwidth-gbs X, --gpu-model NAME, or --measure")


def _run(args: argparse.Namespace) -> int:
    if not 0 < args.gpus <= 4096 or not 0 <= args.context <= 100_000_000:
        raise UsageError("--gpus must be from 1 to 4096 and --context non-negative")
    if args.measured_tok_s is not None and not 0 < args.measured_tok_s < 1e9:
        raise UsageError("--measured-tok-s must be a positive number")
    if args.json not in (None, "-"):
        check_writable(Path(args.json), "--json")
    if args.report is not None:
        check_writable(args.report, "--report")
        report_host(args.report)  # refuses a file that is not a rigaudit report
    plan_file = load_plan_file(args.plan)[0] if args.plan is not None else None
    spec = spec_from_args(args)
    comm = comm_from_args(args, spec, args.gpus)
    bandwidth, source, achievable = _bandwidth(args)
    roofline = Roofline(
        spec.active_params,
        spec.bytes_per_param,
        spec.kv_bytes_per_token,
        args.context,
        args.gpus,
        bandwidth,
        source,
        args.measured_tok_s,
        achievable=achievable,
        comm=comm,
        weights=spec.mix(),
        notes=tuple(spec.notes),
    )
    plan_note = _plan_note(plan_file, roofline.bound_tok_s, roofline.measured_tok_s) if plan_file is not None else ""
    data = roofline.to_dict() | ({"plan_note": plan_note} if plan_note else {})
    notes = [*([spec.source] if args.config is not None else []), *roofline_lines(roofline)]
    result = BenchResultReported(kind="roofline", summary="Benchmark comparison", data=data, notes=notes)
    with open_session(
        "roofline", consumers=[terminal_for(screen(args))], transcript=args.transcript, record=not args.no_transcript
    ) as session:
        session.emit(result)
        if args.report is not None:
            bar = roofline_bar(roofline.bound_tok_s, roofline.measured_tok_s, plan_note)
            picture = picture_markdown(
                "roofline", "Decode roofline", args.report, draw_roofline(roofline.bound_tok_s, roofline.measured_tok_s), bar
            )
            lines = "\n".join(f"- {line}" for line in roofline_lines(roofline))
            append_section(args.report, result.summary, f"### Decode roofline\n\n{lines}\n\n{picture}")
            session.emit(ReportWritten(path=str(args.report), section=result.summary))
        if args.json:
            from rigaudit.orchestrator.report.output import write_json

            write_json(Path(args.json), json.dumps(result.data, indent=2))
    return 0


def _plan_note(plan: Plan, bound: float, measured: float | None) -> str:
    """What the plan of an audit can buy (its steps' gains together), against the measured gap to the bound."""
    if not plan.steps:
        return "the plan has nothing to fix: the gap lies in the serving software"
    gain = plan_gain(plan)
    parts = []
    if gain.stability:
        parts.append(f"fixes {', '.join(gain.stability)} (failures first: no figure holds before)")
    if gain.counted:
        parts.append(f"{len(gain.counted)} step(s) buy {gain.low:g}-{gain.high:g}%")
    note = f"the plan: {'; '.join(parts) or 'nothing that buys throughput'}"
    if measured is not None and bound > 0 and gain.counted:
        reach = f"{measured * (1 + gain.low / 100):,.1f}-{measured * (1 + gain.high / 100):,.1f} tok/s"
        rest = "the rest of the gap lies in the serving software" if measured * (1 + gain.high / 100) < bound / 2 else ""
        note += f", to {reach} of {bound:,.1f}" + (f"; {rest}" if rest else "")
    return note


COMMAND = Command(
    "roofline", "single-stream decode bound (a range) from bandwidth and all-reduces; measured / bound", _add, _run, __doc__ or ""
)
