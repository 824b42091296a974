"""Parsing an argument list against a :class:`~tools.policy.schema.Form` (a read-only whitelist grammar).

The shape is checked first (every option known, every value matching, the operands' number), then
the paths it reads or lists (:mod:`.paths`), so a :class:`Mismatch` says which of the two failed:
a path problem carries its own decision (``deny`` for a secret, ``ask`` off the allow-list).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from rigaudit.tools.core.record import Record
from rigaudit.tools.policy import paths
from rigaudit.tools.policy.checks import Subject, show
from rigaudit.tools.policy.paths import PathProblem
from rigaudit.tools.policy.schema import READ_PATH, Form

_GREP_PATTERN_OPTIONS = ("-e", "-f", "--regexp", "--file")


class CompiledForm(Record):
    form: Form
    flags: tuple[re.Pattern[str], ...]
    valued: dict[str, re.Pattern[str] | None]
    """Value patterns; ``None`` means the value is a path that is read."""
    operand: re.Pattern[str] | None
    recursive: tuple[re.Pattern[str], ...]
    no_follow: tuple[re.Pattern[str], ...]
    follow: tuple[re.Pattern[str], ...]
    follow_all: tuple[re.Pattern[str], ...]


class Mismatch(Record):
    """Why an argument list does not parse as a form: its shape, or (``path`` set) a path it names."""

    reason: str
    path: PathProblem | None = None
    unbounded: bool = False
    """The arguments are a read-only form, but one that runs until killed (no bound, or a follow/loop option)."""


def compile_form(form: Form) -> CompiledForm:
    """Compile the form's regexes (a bad one raises :class:`re.error`)."""

    def each(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in patterns)

    return CompiledForm(
        form=form,
        flags=each(form.flags),
        valued={k: None if v == READ_PATH else re.compile(v) for k, v in form.valued.items()},
        operand=re.compile(form.operand_re) if form.operand_re else None,
        recursive=each(form.recursive),
        no_follow=each(form.no_follow),
        follow=each(form.follow),
        follow_all=each(form.follow_all),
    )


class _Parsed(Record, frozen=False):
    operands: list[str]
    seen: set[str]
    options: list[str]
    read_values: list[str]
    values: dict[str, str]


def _is_flag(compiled: CompiledForm, arg: str) -> bool:
    return any(p.fullmatch(arg) for p in compiled.flags)


def _value(compiled: CompiledForm, option: str, value: str, parsed: _Parsed) -> str | None:
    pattern = compiled.valued[option]
    parsed.seen.add(option)
    parsed.values[option] = value
    if pattern is None:
        parsed.read_values.append(value)
        return None
    return None if pattern.fullmatch(value) else f"{show(value)} is not a recognized value for {option}"


def _short_bundle(compiled: CompiledForm, arg: str, rest: list[str], parsed: _Parsed) -> str | None:
    """getopt: ``-abc`` is ``-a -b -c``; a letter that takes a value takes the rest of the word, or the next argument."""
    for index, letter in enumerate(arg[1:], start=1):
        option = "-" + letter
        if option in compiled.valued:
            value = arg[index + 1 :]
            if not value:
                if not rest:
                    return f"{option} needs a value"
                value = rest.pop(0)
            return _value(compiled, option, value, parsed)
        if not _is_flag(compiled, option):
            return f"option {show(arg)} is not in the recognized read-only forms ({option})"
        parsed.seen.add(option)
        parsed.options.append(option)
    return None


def _parse(compiled: CompiledForm, args: Sequence[str]) -> _Parsed | str:
    parsed = _Parsed([], set(), [], [], {})
    rest = list(args)
    options_done = False
    getopt = compiled.form.getopt
    while rest:
        arg = rest.pop(0)
        if not options_done and not arg.startswith("-") and _is_flag(compiled, arg):
            continue  # a flag that is not an option, such as find's ``!`` and ``(``
        if options_done or not arg.startswith("-") or arg == "-":
            parsed.operands.append(arg)
            continue
        if arg == "--":
            options_done = True
            continue
        name, eq, attached = arg.partition("=")
        if arg in compiled.valued or (eq and name.startswith("--") and name in compiled.valued):
            option = name if eq else arg
            if not eq:
                if not rest:
                    return f"{option} needs a value"
                attached = rest.pop(0)
            if (problem := _value(compiled, option, attached, parsed)) is not None:
                return problem
            continue
        flag = next((p for p in compiled.flags if p.fullmatch(arg)), None)
        if flag is not None:
            parsed.seen.update((arg, flag.pattern))
            parsed.options.append(arg)
            continue
        if getopt and arg.startswith("--") and not eq and rest and _is_flag(compiled, f"{arg}={rest[0]}"):
            joined = f"{arg}={rest.pop(0)}"  # --opt value, spelt --opt=value in the form
            parsed.seen.add(joined)
            parsed.options.append(joined)
            continue
        if getopt and not arg.startswith("--") and len(arg) > 2:
            if (problem := _short_bundle(compiled, arg, rest, parsed)) is not None:
                return problem
            continue
        return f"option {show(arg)} is not in the recognized read-only forms"
    return parsed


def _any(patterns: tuple[re.Pattern[str], ...], options: list[str]) -> bool:
    return any(p.fullmatch(o) for p in patterns for o in options)


def mismatch(compiled: CompiledForm, args: Sequence[str], subject: Subject) -> Mismatch | None:
    """``None`` when ``args`` parse as the form and every path they name may be used so; otherwise why not."""
    form = compiled.form
    parsed = _parse(compiled, args)
    if isinstance(parsed, str):
        return Mismatch(parsed, _denied_path(args, subject))
    if form.required and not any(r in parsed.seen for r in form.required):
        return Mismatch(f"needs one of {', '.join(form.required)} (a bound, or the option that makes it a read)", unbounded=True)
    if unbounded := next((o for o in form.unbounded if o in parsed.seen), None):
        return Mismatch(f"{unbounded} makes it run until killed", unbounded=True)
    operands = parsed.operands
    if form.verbs:
        if not operands or operands[0] not in form.verbs:
            got = show(operands[0]) if operands else "nothing"
            return Mismatch(f"{got} is not one of the read-only subcommands ({', '.join(form.verbs)})")
        operands = operands[1:]
    if form.operands == "grep" and not any(o in parsed.seen for o in _GREP_PATTERN_OPTIONS):
        if not operands:
            return Mismatch("a pattern is needed")
        operands = operands[1:]
    if (shape := _operands_shape(compiled, operands)) is not None:
        return Mismatch(shape)
    problems = [p for value in parsed.read_values if (p := subject.vetted("read", value, paths.vet_read)) is not None]
    problems += _operand_paths(compiled, operands, parsed, subject)
    if not problems:
        return None
    worst = min(problems, key=lambda p: 0 if p.decision == "deny" else 1)  # every path is vetted: deny dominates
    return Mismatch(worst.reason, worst)


def _denied_path(args: Sequence[str], subject: Subject) -> PathProblem | None:
    """A path among arguments that fit no form (``-x /p``, ``--x=/p``, ``/p``) whose read is denied: deny dominates
    whatever option made the form not match, so an added flag never turns a denied path into a question."""
    for arg in args:
        value = arg.partition("=")[2] if arg.startswith("-") else arg
        problem = subject.vetted("read", value, paths.vet_read) if value.startswith("/") else None
        if problem is not None and problem.decision == "deny":
            return problem
    return None


def _operands_shape(compiled: CompiledForm, operands: list[str]) -> str | None:
    form = compiled.form
    if len(operands) < form.min_operands:
        return f"needs at least {form.min_operands} operand(s)"
    if form.max_operands is not None and len(operands) > form.max_operands:
        return f"takes at most {form.max_operands} operand(s)"
    if form.operands == "none":
        return f"unexpected operand {show(operands[0])}" if operands else None
    if form.operands == "grep" and not operands:
        return "name the files to search (an absolute path)"
    if form.operands == "match":
        bad = next((o for o in operands if compiled.operand is None or not compiled.operand.fullmatch(o)), None)
        return None if bad is None else f"operand {show(bad)} is not recognized"
    return None


def _recursive(compiled: CompiledForm, parsed: _Parsed) -> bool:
    if compiled.form.depth:
        depth = parsed.values.get(compiled.form.depth)
        return depth is None or not depth.isdecimal() or int(depth) > 1
    return _any(compiled.recursive, parsed.options)


def _operand_paths(compiled: CompiledForm, operands: list[str], parsed: _Parsed, subject: Subject) -> list[PathProblem]:
    form = compiled.form
    if form.operands not in ("read", "grep", "list"):
        return []
    recursive = _recursive(compiled, parsed)
    problems: list[PathProblem] = []
    if form.operands == "list" and not operands:
        operands = ["/"]  # ls, find: no operand is the working directory, which is / (``ls -R`` lists the whole tree)
    if form.operands == "list" and recursive and _any(compiled.follow_all, parsed.options):
        why = "follows every link while it recurses, so it can reach any tree (another root, /): list without -L"
        problems.append(PathProblem("ask", "recursive-listing", f"{show(operands[0])}: {why}"))
    for operand in operands:
        if form.operands == "list":
            follows = _any(compiled.follow, parsed.options) or (form.follows and not _any(compiled.no_follow, parsed.options))
            vet = functools.partial(paths.vet_list, follow_final=follows, recursive=recursive)
            problem = subject.vetted(f"list:{follows}:{recursive}", operand, vet)
        elif recursive:
            problem = subject.vetted("recursive", operand, paths.vet_recursive_read)
        else:
            problem = subject.vetted("read", operand, paths.vet_read)
        if problem is not None:
            problems.append(problem)
    return problems
