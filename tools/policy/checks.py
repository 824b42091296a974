"""The named checks guards and rules refer to: what a regex cannot express.

A check returns ``None`` when it does not fire, or a short detail (what it found) when it does.
Line checks see the raw command line; argv checks see a :class:`Subject`: the parsed arguments and
the file system their paths are resolved on (each path is resolved once per command).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.policy import lexer, paths, secrets
from rigaudit.tools.policy.fsview import FileSystem
from rigaudit.tools.policy.paths import PathProblem
from rigaudit.tools.policy.resolve import resolve

MAX_LENGTH = 4096

_OPERATOR_WORD = r"[;&|]+|\d*[<>]+[&|]?\d*-?|&>>?|\$\(|`"
_SUBSTITUTION = r"\$\(|`|[<>]\("
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
_RECURSIVE = r"-[a-zA-Z]*[rR][a-zA-Z]*|--rec[a-z]*|--der[a-z-]*|--d[a-z]*=recurse|-[a-zA-Z]*drecurse"
_RECURSE_ACTION = r"(-[a-zA-Z]*d|--d[a-z]*) recurse"
"""grep's ``-d recurse`` / ``--directories=recurse`` is ``-r`` (and getopt_long takes ``--recu`` for ``--recursive``)."""


def show(text: str, limit: int = 60) -> str:
    """A one-line, printable rendering of an argument for a reason string."""
    shown = text.encode("ascii", "backslashreplace").decode("ascii")
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in shown)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


class Subject(Record, frozen=False):
    """One command being vetted: its argv, and the file system its paths are resolved on."""

    argv: tuple[str, ...]
    fs: FileSystem
    _guards: list[tuple[str, PathProblem]] | None = field(default=None, repr=False)
    _reads: dict[tuple[str, str], PathProblem | None] = field(default_factory=dict, repr=False)

    def path_problems(self) -> list[tuple[str, PathProblem]]:
        """What each argument naming a path forces (``paths.guard``), in argument order."""
        if self._guards is None:
            found: list[tuple[str, PathProblem]] = []
            follows = self.argv[0].rsplit("/", 1)[-1] not in NAMES_ONLY
            for arg in self.argv[1:]:
                for candidate in dict.fromkeys(paths.path_candidates(arg)):
                    problem = _candidate_problem(candidate, self.fs, follows)
                    if problem is not None:
                        found.append((candidate, problem))
            self._guards = found
        return self._guards

    def vetted(self, how: str, path: str, vet: Callable[[str, FileSystem], PathProblem | None]) -> PathProblem | None:
        """``vet(path)``, once per command and way of use (``how``)."""
        key = (how, path)
        if key not in self._reads:
            self._reads[key] = vet(path, self.fs)
        return self._reads[key]


NAMES_ONLY = frozenset({"ls", "readlink", "realpath", "stat", "find", "lsblk", "df", "findmnt"})
"""Programs that may name a final magic link without opening it (``readlink /proc/1/exe``): their forms vet it."""


def _candidate_problem(candidate: str, fs: FileSystem, follows: bool) -> PathProblem | None:
    if "/" not in candidate:
        if secrets.is_secret_name(candidate):
            return PathProblem("deny", "secret-path", f"{show(candidate)} names a credential file")
        return None
    if candidate.startswith(("~", "-")) or "\x00" in candidate:
        return None
    return paths.guard(candidate, fs, follow_final=follows)


ArgvCheck = Callable[[Subject], str | None]
LineCheck = Callable[[str], str | None]


class Check(Record):
    line: LineCheck | None = None
    argv: ArgvCheck | None = None


def _too_long_line(line: str) -> str | None:
    return f"{len(line)} characters (limit {MAX_LENGTH})" if len(line) > MAX_LENGTH else None


def _too_long_argv(subject: Subject) -> str | None:
    size = sum(len(a) + 1 for a in subject.argv) - 1
    return f"{size} characters (limit {MAX_LENGTH})" if size > MAX_LENGTH else None


def _nul_line(line: str) -> str | None:
    return f"at offset {line.index(chr(0))}" if "\x00" in line else None


def _nul_argv(subject: Subject) -> str | None:
    return next((show(a) for a in subject.argv if "\x00" in a), None)


def _empty_line(line: str) -> str | None:
    return "nothing to run" if not line.strip() else None


def _empty_argv(subject: Subject) -> str | None:
    return "nothing to run" if not subject.argv or not subject.argv[0] else None


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


def _control_chars(subject: Subject) -> str | None:
    for arg in subject.argv:
        for char in arg:
            if unicodedata.category(char) in _BAD_CATEGORIES:
                return f"U+{ord(char):04X} in {show(arg)}"
    return None


def _program_lookalike(subject: Subject) -> str | None:
    return show(subject.argv[0]) if not subject.argv[0].isascii() else None


def _lookalike_dash(subject: Subject) -> str | None:
    for arg in subject.argv[1:]:
        if arg and not arg[0].isascii() and (unicodedata.category(arg[0]) == "Pd" or arg[0] in "\u2212\ufe63\uff0d"):
            return show(arg)
    return None


def _env_prefix(subject: Subject) -> str | None:
    return show(subject.argv[0]) if "=" in subject.argv[0] else None


def _program_path(subject: Subject) -> str | None:
    """A program named by path must be in a standard bin directory, as written and as resolved (and stably so)."""
    program = subject.argv[0]
    if "/" not in program:
        return None
    if not program.startswith("/"):
        return f"{show(program)} (a relative path)"
    directory = paths.normalize(program).rsplit("/", 1)[0] or "/"
    resolved = resolve(program.rsplit("/", 1)[0] or "/", subject.fs)
    standard = paths.STANDARD_BIN_DIRS | {resolve(d, subject.fs).path for d in paths.STANDARD_BIN_DIRS}
    if directory not in paths.STANDARD_BIN_DIRS or resolved.path not in standard or resolved.refused:
        return show(program) if resolved.path == directory else f"{show(program)} (in {resolved.path})"
    unstable = resolved.unstable or resolve(program, subject.fs).unstable
    if unstable is not None:
        return f"{show(program)}: {unstable}"
    return None


def _operator_word(subject: Subject) -> str | None:
    return next((show(a) for a in subject.argv[1:] if re.fullmatch(_OPERATOR_WORD, a)), None)


def _substitution_word(subject: Subject) -> str | None:
    return next((show(a) for a in subject.argv if re.search(_SUBSTITUTION, a)), None)


def _path_guard(rule: str) -> ArgvCheck:
    """A check that fires on the first argument whose path problem is ``rule``'s."""

    def check(subject: Subject) -> str | None:
        return next((problem.reason for _, problem in subject.path_problems() if problem.rule == rule), None)

    return check


def _unexpanded_path(subject: Subject) -> str | None:
    for arg in subject.argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if paths.looks_like_path(value) and (value.startswith("~") or re.search(paths.UNEXPANDED, value)):
            return show(arg)
    return None


def _recursive_over_secrets(subject: Subject) -> str | None:
    options_done = False
    recursive = False
    targets: list[str] = []
    args = subject.argv[1:]
    for index, arg in enumerate(args):
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-"):
            following = args[index + 1] if index + 1 < len(args) else ""
            action = re.fullmatch(_RECURSE_ACTION, f"{arg} {following}")
            recursive = recursive or bool(re.fullmatch(_RECURSIVE, arg)) or action is not None
        elif arg.startswith("/"):
            targets.append(arg)
    if not recursive:
        return None
    for target in targets:
        problem = subject.vetted("recursive", target, paths.vet_recursive_read)
        if problem is not None and problem.decision == "deny":
            return problem.reason
    return None


def _extended_config(subject: Subject) -> str | None:
    """``lspci`` asked for config space beyond the standard header: ``-xxx`` however it is spelt (``-x -x -x``)."""
    count = 0
    args = iter(subject.argv[1:])
    for arg in args:
        if arg == "--":
            break
        if not arg.startswith("-") or arg.startswith("--"):
            continue
        for index, letter in enumerate(arg[1:]):
            if letter in _LSPCI_VALUED:
                if index == len(arg) - 2:
                    next(args, None)  # the value is the next argument
                break
            count += letter == "x"
    return f"-x given {count} times (= -{'x' * count})" if count >= 3 else None


_LSPCI_VALUED = frozenset("sdipFAHO")


def _reads_device(subject: Subject) -> str | None:
    """For a program that reads its path arguments: one of them is a device node, FIFO, socket or register file."""
    for arg in subject.argv[1:]:
        for candidate in dict.fromkeys(paths.path_candidates(arg)):
            problem = paths.device_problem(candidate, subject.fs) if candidate.startswith("/") else None
            if problem is not None and problem.decision == "deny":
                return problem.reason
    return None


def _sed_unsandboxed(subject: Subject) -> str | None:
    """GNU sed runs ``w``, ``e`` and ``r`` commands unless ``--sandbox`` is given (before the script)."""
    return None if "--sandbox" in subject.argv[1:] else "no --sandbox"


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
    "secret-path": Check(argv=_path_guard("secret-path")),
    "magic-link": Check(argv=_path_guard("magic-link")),
    "raw-memory": Check(argv=_path_guard("raw-memory")),
    "unstable-path": Check(argv=_path_guard("unstable-path")),
    "process-environ": Check(argv=_path_guard("process-environ")),
    "unexpanded-path": Check(argv=_unexpanded_path),
    "recursive-over-secrets": Check(argv=_recursive_over_secrets),
    "extended-config": Check(argv=_extended_config),
    "sed-unsandboxed": Check(argv=_sed_unsandboxed),
    "reads-device": Check(argv=_reads_device),
}
