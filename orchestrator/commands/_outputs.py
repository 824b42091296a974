"""Output flags: each is declared with the kind of path it writes, and ``cli.main`` checks every one given
against :mod:`rigaudit.tools.files.outputs` before the command runs (one line, exit status 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path

from rigaudit.tools.files.outputs import Kind, check_output, make_folders

_MARK = "rigaudit_output"


class OutputFlag:
    """What an output flag writes: ``kind`` (or a function of the other arguments that says it), ``stdout`` when
    ``-`` is stdout, ``force``: the dest of the flag that lets a new folder replace a non-empty one."""

    def __init__(
        self, kind: Kind | Callable[[argparse.Namespace], Kind], *, stdout: bool = False, force: str | None = None
    ) -> None:
        self.kind, self.stdout, self.force = kind, stdout, force

    def kind_for(self, args: argparse.Namespace) -> Kind:
        return self.kind if isinstance(self.kind, Kind) else self.kind(args)


def output(
    action: argparse.Action,
    kind: Kind | Callable[[argparse.Namespace], Kind] = Kind.FILE,
    *,
    stdout: bool = False,
    force: str | None = None,
) -> argparse.Action:
    """Declare ``action`` (what ``add_argument`` returned) an output flag; returns it."""
    setattr(action, _MARK, OutputFlag(kind, stdout=stdout, force=force))
    return action


def flag_of(action: argparse.Action) -> OutputFlag | None:
    """The output declaration of ``action``; ``None``: it is not an output flag."""
    found = getattr(action, _MARK, None)
    return found if isinstance(found, OutputFlag) else None


_PARSER = "_output_parser_"


def remember_parsers(parser: argparse.ArgumentParser, depth: int = 0) -> None:
    """Let each subcommand's parser put itself in the arguments it parses (``_output_parser_N``), so
    :func:`check_outputs` finds the output flags of the subcommands taken (a dest such as ``command`` may be
    taken by an option of the subcommand: ``bench inference --command``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                child.set_defaults(**{f"{_PARSER}{depth}": child})
                remember_parsers(child, depth + 1)


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and the subcommands' parsers ``args`` went through."""
    yield parser
    taken = sorted((k, v) for k, v in vars(args).items() if k.startswith(_PARSER))
    for _, child in taken:
        if isinstance(child, argparse.ArgumentParser):
            yield child


def every_output(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """Every action of ``parser`` and of its subcommands, with the subcommand names that lead to it (for tests and
    docs: each output flag of each command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from every_output(child, (*prefix, name))
        else:
            yield prefix, action


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every output flag given (a value other than its default) may be written, else :class:`OutputRefused`; then
    the missing folders they go in are created."""
    given: list[tuple[Path, str]] = []
    for chosen in _chosen(parser, args):
        for action in chosen._actions:
            flag = flag_of(action)
            value = getattr(args, action.dest, None)
            if flag is None or value is None or (action.default is not None and value == action.default):
                continue
            what = max(action.option_strings, key=len) if action.option_strings else action.dest
            force = bool(getattr(args, flag.force, False)) if flag.force else None
            check_output(Path(value), what, flag.kind_for(args), stdout=flag.stdout, force=force)
            given.append((Path(value), what))
    for path, what in given:
        make_folders(path, what)


__all__ = ["OutputFlag", "check_outputs", "every_output", "flag_of", "output", "remember_parsers"]
