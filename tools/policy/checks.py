"""The named checks guards and rules refer to: the few judgements a regex cannot express.

A check returns ``None`` when it does not fire, or a short detail (what it found) when it does.
Line checks see the raw command line; argv checks see the parsed arguments.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigaudit.tools.policy import lexer, paths

MAX_LENGTH = 4096
ArgvCheck = Callable[[Sequence[str]], str | None]
LineCheck = Callable[[str], str | None]

_OPERATOR_WORD = re.compile(r"[;&|]+|\d*[<>]+[&|]?\d*-?|&>>?|\$\(|`")
_SUBSTITUTION = re.compile(r"\$\(|`|[<>]\(")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
_RECURSIVE = re.compile(r"-[a-zA-Z]*[rR][a-zA-Z]*|--recursive|--dereference-recursive")


def show(text: str, limit: int = 60) -> str:
    """A one-line, printable rendering of an argument for a reason string."""
    shown = text.encode("ascii", "backslashreplace").decode("ascii")
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in shown)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


@dataclass(frozen=True)
class Check:
    line: LineCheck | None = None
    argv: ArgvCheck | None = None


def _too_long_line(line: str) -> str | None:
    return f"{len(line)} characters (limit {MAX_LENGTH})" if len(line) > MAX_LENGTH else None


def _too_long_argv(argv: Sequence[str]) -> str | None:
    size = sum(len(a) + 1 for a in argv) - 1
    return f"{size} characters (limit {MAX_LENGTH})" if size > MAX_LENGTH else None


def _nul_line(line: str) -> str | None:
    return f"at offset {line.index(chr(0))}" if "\x00" in line else None


def _nul_argv(argv: Sequence[str]) -> str | None:
    return next((show(a) for a in argv if "\x00" in a), None)


def _empty_line(line: str) -> str | None:
    return "nothing to run" if not line.strip() else None


def _empty_argv(argv: Sequence[str]) -> str | None:
    return "nothing to run" if not argv or not argv[0] else None


def _first_special(line: str, kinds: tuple[str, ...]) -> str | None:
    for special in lexer.scan(line):
        if special.kind in kinds:
            return f"{special.text!r} at offset {special.offset}"
    return None


def _unparseable(line: str) -> str | None:
    try:
        lexer.split(line)
    except ValueError as exc:
        return str(exc)
    return None


def _control_chars(argv: Sequence[str]) -> str | None:
    for arg in argv:
        for char in arg:
            if unicodedata.category(char) in _BAD_CATEGORIES:
                return f"U+{ord(char):04X} in {show(arg)}"
    return None


def _program_lookalike(argv: Sequence[str]) -> str | None:
    return show(argv[0]) if not argv[0].isascii() else None


def _lookalike_dash(argv: Sequence[str]) -> str | None:
    for arg in argv[1:]:
        if arg and not arg[0].isascii() and (unicodedata.category(arg[0]) == "Pd" or arg[0] in "\u2212\ufe63\uff0d"):
            return show(arg)
    return None


def _env_prefix(argv: Sequence[str]) -> str | None:
    return show(argv[0]) if "=" in argv[0] else None


def _program_path(argv: Sequence[str]) -> str | None:
    program = argv[0]
    if "/" not in program:
        return None
    directory = paths.normalize(program).rsplit("/", 1)[0] or "/"
    return None if directory in paths.STANDARD_BIN_DIRS else show(program)


def _operator_word(argv: Sequence[str]) -> str | None:
    return next((show(a) for a in argv[1:] if _OPERATOR_WORD.fullmatch(a)), None)


def _substitution_word(argv: Sequence[str]) -> str | None:
    return next((show(a) for a in argv if _SUBSTITUTION.search(a)), None)


def _candidates(argv: Sequence[str]) -> list[str]:
    return [c for arg in argv[1:] for c in paths.path_candidates(arg)]


def _secret_path(argv: Sequence[str]) -> str | None:
    return next((show(c) for c in _candidates(argv) if paths.is_secret(c)), None)


def _absolute_candidates(argv: Sequence[str]) -> list[str]:
    return [paths.normalize(c) for c in _candidates(argv) if c.startswith("/")]


def _proc_escape(argv: Sequence[str]) -> str | None:
    return next((show(p) for p in _absolute_candidates(argv) if paths.PROC_ESCAPE.fullmatch(p)), None)


def _raw_memory(argv: Sequence[str]) -> str | None:
    return next((show(p) for p in _absolute_candidates(argv) if paths.RAW_MEMORY.fullmatch(p)), None)


def _process_environ(argv: Sequence[str]) -> str | None:
    return next((show(p) for p in _absolute_candidates(argv) if paths.PROC_ENVIRON.fullmatch(p)), None)


def _unexpanded_path(argv: Sequence[str]) -> str | None:
    for arg in argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if paths.looks_like_path(value) and (value.startswith("~") or paths.UNEXPANDED.search(value)):
            return show(arg)
    return None


def _recursive_over_secrets(argv: Sequence[str]) -> str | None:
    options_done = False
    recursive = False
    targets: list[str] = []
    for arg in argv[1:]:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-"):
            recursive = recursive or bool(_RECURSIVE.fullmatch(arg))
        elif arg.startswith("/"):
            targets.append(paths.normalize(arg))
    if not recursive:
        return None
    return next((t for t in targets if paths.holds_secrets(t)), None)


CHECKS: dict[str, Check] = {
    "empty": Check(_empty_line, _empty_argv),
    "too-long": Check(_too_long_line, _too_long_argv),
    "nul-byte": Check(_nul_line, _nul_argv),
    "unparseable": Check(line=_unparseable),
    "shell-operators": Check(line=lambda line: _first_special(line, ("operator",))),
    "shell-comment": Check(line=lambda line: _first_special(line, ("comment",))),
    "expansion": Check(line=lambda line: _first_special(line, ("expansion",)), argv=_substitution_word),
    "control-chars": Check(argv=_control_chars),
    "program-lookalike": Check(argv=_program_lookalike),
    "lookalike-dash": Check(argv=_lookalike_dash),
    "env-prefix": Check(argv=_env_prefix),
    "program-path": Check(argv=_program_path),
    "operator-word": Check(argv=_operator_word),
    "secret-path": Check(argv=_secret_path),
    "proc-escape": Check(argv=_proc_escape),
    "raw-memory": Check(argv=_raw_memory),
    "process-environ": Check(argv=_process_environ),
    "unexpanded-path": Check(argv=_unexpanded_path),
    "recursive-over-secrets": Check(argv=_recursive_over_secrets),
}
