"""Number options: ``nan``, ``inf`` and a negative number are one line and exit status 2, for every command.

Every option of every command that takes a number with a fraction is found by walking the parser, so an option
added with a bare ``type=float`` (which takes ``nan``, ``inf`` and ``-5``) fails here, not on a user's host.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator

import pytest

from rigaudit.orchestrator.cli import build_parser, main
from rigaudit.orchestrator.commands._arguments import number, positive_seconds

PARSER = build_parser()


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


def _options() -> list[tuple[tuple[str, ...], str, argparse.Action]]:
    found = []
    for path, parser in _parsers(PARSER):
        for action in parser._actions:
            if action.option_strings and action.type is not None:
                found.append((path, action.option_strings[-1], action))
    return found


NUMBERS = [(path, option, action) for path, option, action in _options() if getattr(action.type, "number", False)]


def test_no_option_takes_a_bare_float() -> None:
    bare = [f"{' '.join(path)} {option}" for path, option, action in _options() if action.type is float]
    assert bare == []
    names = {f"{' '.join(path)} {option}" for path, option, _ in NUMBERS}
    assert {"replay --speed", "replay --max-gap", "roofline --bandwidth-gbs", "audit --llm-timeout"} <= names
    assert len(NUMBERS) >= 20


def _run(argv: list[str], parse: bool = True) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as exit_:
        PARSER.parse_args(argv) if parse else main(argv)
    return int(exit_.value.code or 0), stderr.getvalue()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "abc"])
def test_every_number_option_refuses_what_means_nothing(value: str) -> None:
    refused = []
    for path, option, action in NUMBERS:
        if value == "inf" and getattr(action.type, "infinite", False):
            continue  # where a number may be unbounded (replay --max-gap: never shorten a pause)
        code, err = _run([*path, f"{option}={value}"])
        lines = err.strip().splitlines()
        if code != 2 or len(lines) != 1 or option not in lines[0] or "Traceback" in err:
            refused.append(f"{' '.join(path)} {option}={value}: exit {code}, {err!r}")
    assert refused == []


def test_replay_speed_says_what_a_pace_is() -> None:
    for value in ("nan", "inf", "0", "-2"):
        code, err = _run(["replay", "last", f"--speed={value}"], parse=False)
        assert code == 2 and err.count("\n") == 1 and "--speed" in err and "more than 0" in err


def test_the_types_keep_ordinary_values() -> None:
    pace = number("the pace", above=0)
    assert pace("4") == 4.0 and pace("0.25") == 0.25
    gap = number("the longest pause", least=0, infinite=True)
    assert gap("0") == 0.0 and gap("inf") == float("inf")
    assert positive_seconds("1.5") == 1.5
    for bad, parse in (("0", pace), ("nan", gap), ("-0.1", gap), ("inf", positive_seconds), ("nan", positive_seconds)):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
