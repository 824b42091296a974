"""rigaudit: audit a GPU inference server, plan the fixes, apply them safely, prove the gain."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from rigaudit.orchestrator import commands
from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._outputs import check_outputs, remember_parsers
from rigaudit.tools.core.errors import RigauditError
from rigaudit.tools.core.printable import printable
from rigaudit.tools.core.version import rigaudit_version

_ORDER = (
    "audit",
    "snapshot",
    "apply",
    "rollback",
    "bench",
    "roofline",
    "explain",
    "chat",
    "replay",
    "transcripts",
    "diff",
    "policy",
    "schema",
)


def _commands() -> list[Command]:
    import pkgutil  # only for the list of every command: one command is found by its name (``_named``)

    found: dict[str, Command] = {}
    for info in pkgutil.iter_modules(commands.__path__):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        command = getattr(module, "COMMAND", None)
        if isinstance(command, Command):
            found[command.name] = command
    ordered = [found.pop(name) for name in _ORDER if name in found]
    return ordered + sorted(found.values(), key=lambda c: c.name)


def _one_line(text: str) -> str:
    """A message as one line that cannot drive the terminal: controls and bidi characters, and a newline inside
    quoted text (a path, a host's value), shown as escapes."""
    return printable(text.strip()).replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    """A usage error is one line (and where to read more), not the whole usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")  # it may quote argv


def _named(name: str) -> Command | None:
    """The command of the module ``commands/<name>.py``, imported alone: one command starts without the
    imports of all the others (``rigaudit check`` as a prolog must start fast). ``None``: no such module."""
    if not name.isidentifier() or importlib.util.find_spec(f"{commands.__name__}.{name}") is None:
        return None
    command = getattr(importlib.import_module(f"{commands.__name__}.{name}"), "COMMAND", None)
    return command if isinstance(command, Command) and command.name == name else None


class _Version(argparse.Action):
    """``--version``: the version is looked up only when asked (reading the distribution's metadata costs a
    prolog's start tens of ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"rigaudit {version()}")
        parser.exit()


def build_parser(only: Command | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with ``only``, just that command's (what ``main`` uses to run one)."""
    parser = _Parser(
        prog="rigaudit",
        description=__doc__,
        epilog="Start with `rigaudit audit --demo`, or `rigaudit audit` on the GPU server itself. Every output path "
        "(--json, --report, --out, --into...) is checked before any work (docs/exit-status.md, Output paths).",
    )
    parser.add_argument("--version", action=_Version, help="print rigaudit's version and exit")
    parser.set_defaults(_run=None)  # no command named: ``main`` prints the help; a command's parser sets its own
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in [only] if only is not None else _commands():
        child = sub.add_parser(
            command.name,
            help=command.help,
            description=command.description or command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(child)
        child.set_defaults(_run=command.run)
    remember_parsers(parser)
    return parser


def version() -> str:
    """The installed distribution's version."""
    return rigaudit_version()


def main(argv: Sequence[str] | None = None) -> int:
    """The command ``argv`` names (``None``: this process's arguments; the process then runs that one command)."""
    whole_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    only = _named(argv[0]) if argv and not argv[0].startswith("-") else None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = args._run
    if run is None:
        parser.print_help()
        return 2
    if whole_process:
        _keep_imports()
    try:
        check_outputs(parser, args)  # every output flag, before any work: one line, exit status 2
        code: int = run(args)
    except RigauditError as exc:
        print(f"rigaudit: {_one_line(str(exc))}", file=sys.stderr)  # the message may quote host text
        return exc.exit_code
    except KeyboardInterrupt:
        print("rigaudit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    return _reader_gone() if _console_reader_gone() else code


def _keep_imports() -> None:
    """What the command imported lives as long as the process: the cycle collector need not walk it again each time
    the work's own objects are collected (most of the objects a command holds are its modules' classes and models)."""
    import gc

    gc.freeze()


def _console_reader_gone() -> bool:
    """Whether a console's reader went away; a command that drew no console (``check``) never imports rich for it."""
    console = sys.modules.get("rigaudit.orchestrator.ui.safe_console")
    return console is not None and bool(console.reader_gone())


def _reader_gone() -> int:
    """Stdout's reader went away (``| head``): end quietly with 141, as a tool killed by SIGPIPE.

    Stdout is pointed at /dev/null so the interpreter's flush at exit cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


if __name__ == "__main__":
    sys.exit(main())
