"""Where the time of a token goes: a recorded profile split again, with corrected inputs where given.

A profile is recorded by `rigaudit bench inference --profile`: while rigaudit's load runs, the
serving GPUs are sampled through NVML (utilisation, SM and memory clocks, power, memory used, PCIe
and NVLink throughput where the driver has them), and each level's measured time per output token
is split into
  streaming      the bytes of a decode step per GPU (weights per format, KV cache) / achievable bandwidth
  communication  layers x all-reduces per layer x the latency at that message size (bench nccl)
  idle           (1 - NVML utilisation) x time per token: no kernel ran (launch overhead, the host)
  remainder      what is left: busy, not streaming at bandwidth (kernels, prefill, sampling)
The term holding most of the gap above streaming names the kind of fix: host config, parallelism
layout, serving features (CUDA graphs, speculative decoding) or kernels. "sum / measured" above
110% means an input is off.

Examples:
  rigaudit bench inference --base-url http://127.0.0.1:30000 --model M --concurrency 1,8 --profile \\
      --config /models/M/ --measure-bandwidth --yes --json prof.json --report system-improve.md
  rigaudit explain prof.json                                     the split again, as recorded
  rigaudit explain prof.json --bandwidth-gbs 4300 --nccl nccl.json --tp 2   with corrected inputs

Exit status: 0 done; 2 usage error or a file that is not a profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rigaudit.orchestrator.bench.explain import explain_file
from rigaudit.orchestrator.bench.run import Outputs
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_session_arguments, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.commands._profile import add_profile_arguments, profile_options_from_args
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.terminal import terminal_for


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", type=Path, help="a result of `bench inference --profile --json FILE`")
    add_profile_arguments(parser, live=False)
    json_help = "write the re-attributed result (no FILE or '-': stdout)"
    output(parser.add_argument("--json", nargs="?", const="-", metavar="FILE", help=json_help), stdout=True)
    output(
        parser.add_argument("--report", metavar="FILE", help="append the split to this system-improve.md (Where the time goes)")
    )
    add_session_arguments(parser)


def _run(args: argparse.Namespace) -> int:
    options = profile_options_from_args(args)
    outputs = Outputs(json=Path(args.json) if args.json else None, report=Path(args.report) if args.report else None)
    with open_session(
        "explain", consumers=[terminal_for(screen(args))], transcript=args.transcript, record=not args.no_transcript
    ) as session:
        explain_file(args.profile, options, emit=session.emit, outputs=outputs)
    sys.stdout.flush()
    return 0


COMMAND = Command("explain", "where the time of a token goes: a recorded profile split again", _add, _run, __doc__ or "")
