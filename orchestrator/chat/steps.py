"""The steps a conversation can take, and the slash commands that name them."""

from __future__ import annotations

import shlex
from typing import Literal

from rigaudit.orchestrator.chat.load import BenchArgs
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record, field

StepKind = Literal["audit", "plan", "explain", "report", "apply_runtime", "bench_p2p", "bench_inference", "compare", "rollback"]
GATED: frozenset[str] = frozenset({"report", "apply_runtime", "bench_p2p", "bench_inference", "rollback"})
"""Steps that change something or load the GPUs/server: each asks for approval."""
Origin = Literal["person", "model"]
"""Who chose a step: the person (a command, or the words the intent parser read), or a chat model."""


class Step(Record):
    kind: StepKind
    args: tuple[str, ...] = field(default=())
    origin: Origin = "person"
    bench: BenchArgs | None = None
    """A model's typed load settings for ``bench_inference`` (a person's are ``args``, as words)."""

    def describe(self) -> str:
        arg = " ".join((*self.args, *(self.bench.words() if self.bench is not None else ())))
        return {
            "audit": "audit the host",
            "plan": "show the plan",
            "explain": f"explain {arg}",
            "report": f"write the report to {arg or 'system-improve.md'}",
            "apply_runtime": "apply the runtime changes",
            "bench_p2p": "run the P2P micro-benchmark",
            "bench_inference": "rerun the inference benchmark" + (f" ({arg})" if arg else ""),
            "compare": f"compare {arg}",
            "rollback": f"roll back {arg or 'the last apply'}",
        }[self.kind]


HELP = """\
Commands (or say what you want, e.g. "write down in system-improve.md, apply the changes runtime only for now,
check that p2p works with some manual micro bench, then rerun inference benchmark"):
  /audit                     audit the host (read-only)
  /plan                      the prioritized plan
  /why CHECK                 why a check came out as it did (evidence, fix)
  /report [FILE]             write system-improve.md (or FILE)
  /apply runtime             apply the runtime steps, each approved (a snapshot: into a copy)
  /bench p2p                 the P2P micro-benchmark (this machine's GPUs)
  /bench inference [ARGS]    the inference benchmark (--base-url URL --model NAME ...)
  /compare A.json B.json     compare two inference results
  /rollback [JOURNAL]        undo an apply (default: this conversation's last)
  /help, /quit"""


class CommandError(UsageError):
    """A slash command that cannot be understood; the message says how to write it."""


def parse_command(line: str) -> Step | Literal["help", "quit"]:
    """``/report notes.md`` -> ``Step("report", ("notes.md",))``; ``CommandError`` with a hint otherwise."""
    try:
        words = shlex.split(line.strip().lstrip("/"))
    except ValueError as exc:
        raise CommandError(f"cannot read that command: {exc}") from None
    if not words:
        raise CommandError("an empty command; /help lists them")
    name, rest = words[0].lower(), tuple(words[1:])
    if name in ("help", "h", "?"):
        return "help"
    if name in ("quit", "exit", "q", "bye"):
        return "quit"
    if name == "audit":
        return Step("audit")
    if name == "plan":
        return Step("plan")
    if name in ("why", "explain"):
        if len(rest) != 1:
            raise CommandError("/why CHECK, e.g. /why numa.balancing")
        return Step("explain", rest)
    if name == "report":
        if len(rest) > 1:
            raise CommandError("/report [FILE]")
        return Step("report", rest)
    if name == "apply":
        if rest not in ((), ("runtime",)):
            raise CommandError("/apply runtime: only runtime changes are applied from a conversation")
        return Step("apply_runtime")
    if name == "bench":
        if rest[:1] == ("p2p",) and len(rest) == 1:
            return Step("bench_p2p")
        if rest[:1] == ("inference",):
            return Step("bench_inference", rest[1:])
        raise CommandError("/bench p2p, or /bench inference [--base-url URL --model NAME ...]")
    if name == "compare":
        if len(rest) != 2:
            raise CommandError("/compare BASE.json NEW.json")
        return Step("compare", rest)
    if name in ("rollback", "undo"):
        if len(rest) > 1:
            raise CommandError("/rollback [JOURNAL]")
        return Step("rollback", rest)
    raise CommandError(f"no command /{name}; /help lists them")
