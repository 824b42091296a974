"""Parsing an argument list against a :class:`~tools.policy.schema.Form` (a read-only whitelist grammar)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rigaudit.tools.policy import paths
from rigaudit.tools.policy.checks import show
from rigaudit.tools.policy.schema import READ_PATH, Form

_GREP_PATTERN_OPTIONS = ("-e", "-f", "--regexp", "--file")


@dataclass(frozen=True)
class CompiledForm:
    form: Form
    flags: tuple[re.Pattern[str], ...]
    valued: dict[str, re.Pattern[str] | None]
    """Value patterns; ``None`` means the value is a path that is read."""
    operand: re.Pattern[str] | None
    recursive: tuple[re.Pattern[str], ...]


def compile_form(form: Form) -> CompiledForm:
    """Compile the form's regexes (a bad one raises :class:`re.error`)."""
    return CompiledForm(
        form=form,
        flags=tuple(re.compile(p) for p in form.flags),
        valued={k: None if v == READ_PATH else re.compile(v) for k, v in form.valued.items()},
        operand=re.compile(form.operand_re) if form.operand_re else None,
        recursive=tuple(re.compile(p) for p in form.recursive),
    )


def _value_problem(option: str, value: str, pattern: re.Pattern[str] | None) -> str | None:
    if pattern is None:
        return paths.readable(value)
    return None if pattern.fullmatch(value) else f"{show(value)} is not a recognized value for {option}"


def mismatch(compiled: CompiledForm, args: Sequence[str]) -> str | None:
    """``None`` when ``args`` parse as the form; otherwise why they do not (the first problem)."""
    form = compiled.form
    operands: list[str] = []
    seen: set[str] = set()
    recursive = False
    i = 0
    options_done = False
    while i < len(args):
        arg = args[i]
        i += 1
        if not options_done and not arg.startswith("-") and any(p.fullmatch(arg) for p in compiled.flags):
            continue  # a flag that is not an option, such as find's ``!`` and ``(``
        if options_done or not arg.startswith("-") or arg == "-":
            operands.append(arg)
            continue
        if arg == "--":
            options_done = True
            continue
        name, eq, attached = arg.partition("=")
        if arg in compiled.valued or (eq and name.startswith("--") and name in compiled.valued):
            option = name if eq else arg
            if not eq:
                if i >= len(args):
                    return f"{option} needs a value"
                attached = args[i]
                i += 1
            if (problem := _value_problem(option, attached, compiled.valued[option])) is not None:
                return problem
            seen.add(option)
            continue
        flag = next((p for p in compiled.flags if p.fullmatch(arg)), None)
        if flag is None:
            return f"option {show(arg)} is not in the recognized read-only forms"
        seen.add(arg)
        seen.add(flag.pattern)
        recursive = recursive or any(p.fullmatch(arg) for p in compiled.recursive)
    if form.required and not any(r in seen for r in form.required):
        return f"needs one of {', '.join(form.required)} (a bound, or the option that makes it a read)"
    if form.verbs:
        if not operands or operands[0] not in form.verbs:
            got = show(operands[0]) if operands else "nothing"
            return f"{got} is not one of the read-only subcommands ({', '.join(form.verbs)})"
        operands = operands[1:]
    if form.operands == "grep" and not any(o in seen for o in _GREP_PATTERN_OPTIONS):
        if not operands:
            return "a pattern is needed"
        operands = operands[1:]
    return _operands_problem(compiled, operands, recursive)


def _operand_ok(compiled: CompiledForm, arg: str) -> bool:
    return compiled.operand is not None and bool(compiled.operand.fullmatch(arg))


def _operands_problem(compiled: CompiledForm, operands: list[str], recursive: bool) -> str | None:
    form = compiled.form
    kind = form.operands
    if len(operands) < form.min_operands:
        return f"needs at least {form.min_operands} operand(s)"
    if form.max_operands is not None and len(operands) > form.max_operands:
        return f"takes at most {form.max_operands} operand(s)"
    if kind == "none":
        return f"unexpected operand {show(operands[0])}" if operands else None
    if kind == "grep" and not operands:
        return "name the files to search (an absolute path)"
    for operand in operands:
        if (problem := _operand_problem(compiled, operand, recursive)) is not None:
            return problem
    return None


def _operand_problem(compiled: CompiledForm, operand: str, recursive: bool) -> str | None:
    kind = compiled.form.operands
    if kind == "match":
        return None if _operand_ok(compiled, operand) else f"operand {show(operand)} is not recognized"
    if kind == "list":
        return paths.listable(operand)
    problem = paths.readable(operand)
    if problem is None and recursive:
        problem = paths.recursively_readable(operand)
    return problem
