"""Talk with rigaudit: it audits, explains findings, answers "why", proposes the plan, writes the
report, applies runtime fixes, benchmarks and compares, each change approved by you first.

Examples:
  rigaudit chat --demo
  rigaudit chat --snapshot SEED --into COPY          changes go into COPY, never into SEED
  rigaudit chat --llm --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-32B
  rigaudit chat --bench-base-url http://127.0.0.1:30000/v1 --bench-model M --baseline before.json
  printf '/audit\\n/report\\n' | rigaudit chat --snapshot SEED --yes      scripted: one line per command

Say what you want ("write down in system-improve.md, apply the changes runtime only for now, check
that p2p works with some manual micro bench, then rerun inference benchmark") or use commands
(/audit, /plan, /why CHECK, /report [FILE], /apply runtime, /bench p2p, /bench inference [ARGS],
/compare A B, /rollback [JOURNAL], /help, /quit). Without an LLM a small parser understands such
sentences; with --llm the model plans the steps and rigaudit runs them. Without a terminal nothing
is approved unless --yes is given; at one, a question not answered within --approval-timeout
seconds (default 300) is no, and nothing more of that request is asked.

With --llm the endpoint is checked first (its models list, one tiny request; --llm-no-preflight skips
it): a server that refuses, is not there, answers 404 or does not answer within 20 s
(preflight_timeout_s in the config file) ends the chat at once with one line.

Exit status: 0 done; 1 the LLM endpoint failed its check; 2 usage error; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import anyio

from rigaudit.agents.llm import LLMBrain, OpenAIChatModel
from rigaudit.agents.llm.config import LlmConfig
from rigaudit.agents.llm.preflight import preflight
from rigaudit.agents.llm.usage import UsageBook
from rigaudit.orchestrator.change.approval import Console, TerminalConsole, is_interactive
from rigaudit.orchestrator.chat import ChatSettings, Conversation, Coordinator, LlmPlanner
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._approval import add_approval_timeout
from rigaudit.orchestrator.commands._arguments import url
from rigaudit.orchestrator.commands._bench import inference_run
from rigaudit.orchestrator.commands._llm import add_llm_arguments, llm_config_from_args, terminal_approver
from rigaudit.orchestrator.commands._options import add_host_arguments, host_source, screen
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.choose import open_host
from rigaudit.orchestrator.session.core import open_session
from rigaudit.orchestrator.ui.terminal import TerminalUI, terminal_for
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.files.outputs import Kind
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.events.chat import LlmExchange, Message
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.events.union import Event

PROMPT = "you> "


def _add(parser: argparse.ArgumentParser) -> None:
    add_host_arguments(parser)
    into_help = "with --snapshot: the new copy changes go into (default: a temporary one, removed at the end)"
    output(parser.add_argument("--into", type=Path, metavar="DIR", help=into_help), Kind.NEW_FOLDER)
    parser.add_argument("--yes", action="store_true", help="approve every step without asking (scripts)")
    add_approval_timeout(parser)
    bench = parser.add_argument_group("the inference benchmark a conversation reruns")
    bench.add_argument("--bench-base-url", type=url, metavar="URL", help="the inference server to benchmark")
    bench.add_argument("--bench-model", metavar="NAME", help="its model")
    bench.add_argument(
        "--bench-args", default="", metavar="'ARGS'", help="more `bench inference` options, e.g. '--concurrency 1,4'"
    )
    bench.add_argument("--baseline", type=Path, metavar="FILE", help="an earlier `bench inference --json` result to compare with")
    add_llm_arguments(parser)
    parser.add_argument("--llm-agents", action="store_true", help="with --llm: the investigators also dig with the model")
    out = parser.add_argument_group("output")
    out.add_argument("--no-live", action="store_true", help="plain lines instead of the live board")
    output(out.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)"))
    out.add_argument("--no-transcript", action="store_true", help="do not record this session")


class _ChatUI:
    """The terminal UI, without echoing what the person just typed at a terminal."""

    def __init__(self, ui: TerminalUI, echo_user: bool) -> None:
        self.ui = ui
        self.echo_user = echo_user

    def __call__(self, event: Event) -> None:
        if isinstance(event, Message) and event.role == "user" and not self.echo_user:
            return
        self.ui(event)

    def close(self) -> None:
        self.ui.close()


def _read_line(interactive: bool) -> str | None:
    try:
        if interactive:
            return input(PROMPT)
        line = sys.stdin.readline()
    except EOFError:
        sys.stdout.write("\n")  # end the prompt's line
        return None
    return None if line == "" else line.rstrip("\n")


async def stdin_lines(interactive: bool) -> AsyncIterator[str]:
    """Lines from standard input (a prompt at a terminal); ends at end of input."""
    while True:
        line = await anyio.to_thread.run_sync(_read_line, interactive)
        if line is None:
            return
        yield line


def _settings(args: argparse.Namespace, host: object, interactive: bool) -> ChatSettings:
    if args.into is not None and args.snapshot is None and args.demo is None:
        raise UsageError("--into goes with --snapshot (or --demo): the copy that changes are applied to")
    if (args.bench_base_url is None) != (args.bench_model is None):
        raise UsageError("--bench-base-url and --bench-model go together")
    snapshot = host.root if isinstance(host, SnapshotHost) else None
    return ChatSettings(
        snapshot=snapshot,
        into=args.into.absolute() if args.into is not None else None,
        workdir=Path.cwd(),
        assume_yes=args.yes,
        interactive=interactive,
        bench_base_url=args.bench_base_url,
        bench_model=args.bench_model,
        bench_args=tuple(args.bench_args.split()),
        baseline=args.baseline,
    )


def _llm_brain(
    config: LlmConfig | None, model: OpenAIChatModel | None, book: UsageBook | None, emit: EventSink, ui: _ChatUI
) -> LLMBrain | None:
    """With ``--llm-agents`` (given ``config``), the investigators' brain: the model, asking through the chat's UI."""
    if config is None or model is None:
        return None
    approver = terminal_approver(ui.ui.paused, timeout_s=config.ask_timeout_s)
    return LLMBrain(config, model=model, emit=emit, approver=approver, book=book)


async def _converse(
    conversation: Conversation,
    lines: Iterable[str] | AsyncIterator[str],
    model: OpenAIChatModel | None,
    config: LlmConfig | None,
    book: UsageBook | None,
    host: Host,
) -> None:
    """The conversation over ``lines``, the LLM endpoint checked first; the model and the host always closed."""
    try:
        if model is not None and config is not None and config.preflight:
            await preflight(model, book)  # a dead or wrong endpoint is one line now, not at the first request
        await conversation.run(lines)
    finally:
        if model is not None:
            await model.aclose()
        await host.aclose()


def _closing_messages(book: UsageBook | None, removed: Path | None, copy: Path | None) -> list[Event]:
    """What the chat says at its end: the LLM's usage and cost, and what became of the snapshot's copy."""
    said: list[Event] = []
    if book is not None:
        said.append(LlmExchange(agent="total", usage=book.total.as_dict(), cost_usd=book.total_cost()))
        said.append(Message(role="system", text="\n".join(book.lines())))
    if removed is not None:
        said.append(Message(role="system", text=f"the temporary copy {removed} is removed (--into DIR keeps one)"))
    elif copy is not None:
        said.append(Message(role="system", text=f"the changed copy of the snapshot: {copy}"))
    return said


def run_chat(
    args: argparse.Namespace,
    *,
    lines: Iterable[str] | None = None,
    console: Console | None = None,
    interactive: bool | None = None,
    consumers: list[EventSink] | None = None,
) -> int:
    """The chat command; tests give the lines, the approval console and extra event consumers."""
    interactive = is_interactive() if interactive is None else interactive
    config = llm_config_from_args(args)
    if args.llm_agents and config is None:
        raise UsageError("--llm-agents goes with --llm")
    host = open_host(host_source(args))
    settings = _settings(args, host, interactive)
    model = OpenAIChatModel(config) if config is not None else None
    ui = _ChatUI(terminal_for(screen(args), live=interactive), echo_user=not interactive)
    with open_session(
        "chat",
        consumers=[ui, *(consumers or [])],
        transcript=args.transcript,
        record=not args.no_transcript,
        host=host.name,
        source=host.source,
        options={"llm": config is not None, "snapshot": str(settings.snapshot or ""), "yes": args.yes},
    ) as session:
        book = UsageBook(config.max_audit_tokens, prices=config.prices) if config is not None else None
        brain = _llm_brain(config, model, book, session.emit, ui) if args.llm_agents else None
        asker = console if console is not None else TerminalConsole(timeout_s=args.approval_timeout)
        coordinator = Coordinator(host, settings, console=asker, emit=session.emit, brain=brain, bench_words=inference_run)
        planner = None
        if model is not None and book is not None and config is not None:
            planner = LlmPlanner(model, coordinator, book, deadline_s=config.turn_deadline_s)
        conversation = Conversation(coordinator, planner)
        said = lines if lines is not None else stdin_lines(interactive)
        try:
            anyio.run(_converse, conversation, said, model, config, book, host)
        finally:
            removed = coordinator.discard_copy()
        for event in _closing_messages(book, removed, coordinator.copy):
            session.emit(event)
    return session.exit_code


def _run(args: argparse.Namespace) -> int:
    return run_chat(args)


COMMAND = Command(
    "chat", "talk with rigaudit: audit, explain, plan, apply, benchmark (each change approved)", _add, _run, __doc__ or ""
)
