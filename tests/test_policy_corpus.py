"""The policy corpus (tests/policy_corpus.txt): every command vetted as its line says, on the model host."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

from rigaudit.tools.policy import vet_argv, vet_command_line
from tests.support.policy_host import MODEL_HOST

CORPUS = Path(__file__).parent / "policy_corpus.txt"
HELD_OUT = Path(__file__).parent / "policy_corpus_heldout.txt"
_REPEAT = re.compile(r"\{\{(.)\*(\d+)\}\}")


def _load(corpus: Path = CORPUS) -> list[tuple[int, str, str]]:
    cases: list[tuple[int, str, str]] = []
    for number, raw in enumerate(corpus.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        expected, _, command = raw.partition(" ")
        command = command.strip(" ")
        if command.startswith("py:"):
            literal = ast.literal_eval(command[3:])
            assert isinstance(literal, str)
            command = _REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), literal)
        assert expected in LABELS, f"line {number}: bad label {expected!r}"
        cases.append((number, expected, command))
    return cases


LABELS = {"allow": ("allow",), "ask": ("ask",), "deny": ("deny",), "notallow": ("ask", "deny")}
CASES = _load()


def test_corpus_is_large_and_covers_every_verdict() -> None:
    assert len(CASES) >= 1000
    counts = {label: sum(1 for _, e, _ in CASES if e == label) for label in LABELS}
    assert counts["allow"] >= 300 and counts["deny"] >= 400 and counts["ask"] + counts["notallow"] >= 100, counts


def test_every_corpus_line_is_vetted_as_labelled() -> None:
    _vetted_as_labelled(CASES)


def test_every_held_out_line_is_vetted_as_labelled() -> None:
    """Classes a reviewer found (#35): reads of environments, fd tables, config space, vmcoreinfo by any
    program are never allowed; read-only hardware tools are."""
    _vetted_as_labelled(_load(HELD_OUT))


def _vetted_as_labelled(cases: list[tuple[int, str, str]]) -> None:
    wrong = []
    for number, expected, command in cases:
        verdict = vet_command_line(command, MODEL_HOST)
        if verdict.decision not in LABELS[expected] or not verdict.reason or "\n" in verdict.reason:
            wrong.append(f"line {number}: {command[:100]!r} -> {verdict.decision} [{verdict.rule}] {verdict.reason[:160]}")
        elif verdict.decision == "allow" and not (verdict.argv and verdict.rule):
            wrong.append(f"line {number}: allowed without an argv or a rule")
    assert not wrong, f"{len(wrong)} of {len(cases)} lines vetted wrongly:\n" + "\n".join(wrong)


def test_argv_and_line_agree_on_every_command() -> None:
    for _, _, command in CASES:
        try:
            argv = shlex.split(command)
        except ValueError:
            continue
        line = vet_command_line(command, MODEL_HOST)
        if line.rule in ("shell-operators", "shell-comment", "expansion", "too-long", "nul-byte", "empty", "unparseable"):
            continue  # line guards: an argv has no shell syntax
        assert vet_argv(argv, MODEL_HOST).decision == line.decision, command
