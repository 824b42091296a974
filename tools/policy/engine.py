"""The policy engine: loads rules (checking their shape, and on request every rule's examples) and vets commands.

Order of vetting: guards on the raw line, then the line is split (POSIX, no expansion), guards on
the argv, then the program's own rules, most severe first (deny, ask, allow). Every guard and rule
that applies is heard and the most severe verdict wins, so deny dominates ask dominates allow,
whatever the order of the arguments (``rm -rf X /proc/1/environ`` is ``deny``, not the environ
guard's ``ask``). Paths are vetted where the kernel will open them, on a file system view
(:mod:`.fsview`: this machine by default). A program that can only read, in a form no rule knows,
is ``ask``; any other known program in such a form is ``deny``; an unknown program is ``ask``.
Any internal error fails closed (``deny``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rigaudit.tools.core.record import Record
from rigaudit.tools.policy import lexer
from rigaudit.tools.policy.checks import CHECKS, ArgvCheck, LineCheck, Subject, show
from rigaudit.tools.policy.forms import CompiledForm, Mismatch, compile_form, mismatch
from rigaudit.tools.policy.fsview import EXAMPLE_HOST, LIVE, FileSystem
from rigaudit.tools.policy.schema import Rule, RuleError
from rigaudit.tools.policy.verdict import SEVERITY, Decision, Verdict

_FAMILY = r"(python|pypy|pip|perl|ruby|php|lua|node|tclsh|wish)[0-9.]*|(mkfs|fsck|mkswap|mount|umount)\..+"


def program_name(argv0: str) -> str:
    """The name rules know a program by: the basename, without an interpreter's version (``python3.11``)."""
    name = argv0.rsplit("/", 1)[-1]
    match = re.fullmatch(_FAMILY, name)
    if match is None:
        return name
    return match.group(1) or match.group(2)


FALLBACKS: tuple[tuple[str, Decision, str], ...] = (
    ("unknown-program", "ask", "a program no rule names: a person must approve it"),
    ("unrecognized-form", "ask", "a program that only reads, in arguments that fit none of its read-only forms"),
    ("not-a-read-form", "deny", "a program that can change the system, in arguments that fit none of its read-only forms"),
    ("unbounded-read", "ask", "a read-only form that runs until killed (no -n/-c bound, a follow or loop option)"),
    ("not-allow-listed", "ask", "reads a path outside the read allow-list, or a relative path"),
    ("device-node", "deny", "reads a device node not known to be safe, a FIFO or a socket"),
    ("registers", "deny", "reads PCI BARs, ROMs, legacy I/O or debug and trace files (reads can have side effects)"),
    ("home-directory", "ask", "lists inside a home directory, whose names can be private"),
    ("recursive-listing", "ask", "lists a tree that holds credentials somewhere inside"),
    ("policy-error", "deny", "the policy itself failed on this input (fails closed)"),
)
"""The verdicts no rule gives: what ``Verdict.rule`` names when no rule decided."""


class _Compiled(Record):
    rule: Rule
    any_arg: tuple[re.Pattern[str], ...]
    unless_only: tuple[re.Pattern[str], ...]
    check: ArgvCheck | None
    form: CompiledForm | None


def _validate(rule: Rule) -> None:
    """The rule's shape (no pattern compiled): raises :class:`RuleError`."""
    where = f"rule {rule.name!r}"
    if not rule.name or not rule.description or not rule.examples:
        raise RuleError(f"{where}: needs a name, a description and at least one example")
    if rule.check and rule.check not in CHECKS:
        raise RuleError(f"{where}: unknown check {rule.check!r}")
    if not rule.programs and not rule.check:
        raise RuleError(f"{where}: a guard (no programs) needs a check")
    if rule.decision == "allow" and (rule.form is None or not rule.programs):
        raise RuleError(f"{where}: an allow rule needs programs and a form (allow is a whitelist)")
    if rule.decision != "allow" and rule.form is not None:
        raise RuleError(f"{where}: only allow rules have a form")


def _compile(rule: Rule) -> _Compiled:
    """The rule with its patterns compiled (a bad one raises :class:`RuleError`)."""
    try:
        return _Compiled(
            rule=rule,
            any_arg=tuple(re.compile(p) for p in rule.any_arg),
            unless_only=tuple(re.compile(p) for p in rule.unless_only),
            check=CHECKS[rule.check].argv if rule.check else None,
            form=compile_form(rule.form) if rule.form is not None else None,
        )
    except re.error as exc:
        raise RuleError(f"rule {rule.name!r}: bad pattern: {exc}") from None


def _applies(c: _Compiled, argv: Sequence[str], subject: Subject) -> str | None:
    """``None`` when the rule's conditions do not hold; otherwise a detail ('' when there is none)."""
    rule = c.rule
    args = argv[1:]
    if rule.first and (not args or args[0] not in rule.first):
        return None
    if rule.unless_first and args and args[0] in rule.unless_first:
        return None
    if len(args) < rule.min_args:
        return None
    if c.unless_only and args and all(any(p.fullmatch(a) for p in c.unless_only) for a in args):
        return None
    detail = ""
    if c.any_arg:
        hit = next((a for a in args if any(p.fullmatch(a) for p in c.any_arg)), None)
        if hit is None:
            return None
        detail = show(hit)
    if c.check is not None:
        found = c.check(subject)
        if found is None:
            return None
        detail = detail or found
    return detail


class Policy:
    """A loaded rule set. Construction checks each rule's shape and, unless ``lazy``, compiles its patterns
    (:class:`RuleError`); with ``check_examples`` it also vets each rule's examples.

    ``lazy``: a program's rules are compiled when a command of that program is first vetted (a bad
    pattern then fails closed, ``deny``), so a process that vets a few commands (``rigaudit check``)
    does not compile all of them. The default policy is lazy and unchecked at load; its tests vet
    every rule's examples (``tests/test_policy_rules.py``).

    ``fs`` is the file system paths are resolved on when a call names none (this machine);
    examples are checked on ``examples_fs`` (a model host), so loading never depends on the machine.
    """

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        check_examples: bool = True,
        lazy: bool = False,
        fs: FileSystem = LIVE,
        examples_fs: FileSystem = EXAMPLE_HOST,
    ) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.fs = fs
        self.examples_fs = examples_fs
        self.examples_checked = 0
        """How many examples :meth:`check_examples` has vetted (none at a lazy load)."""
        names = [r.name for r in self.rules]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise RuleError(f"duplicate rule names: {', '.join(duplicates)}")
        for rule in self.rules:
            _validate(rule)
        self._compiled: dict[str, _Compiled] = {} if lazy else {r.name: _compile(r) for r in self.rules}
        self._line_guards: list[tuple[Rule, LineCheck]] = []
        self._argv_guards: list[tuple[Rule, ArgvCheck]] = []
        by_program: dict[str, list[Rule]] = {}
        self.readers: frozenset[str] = frozenset(p for r in self.rules if r.reads_only for p in r.programs)
        """Programs that can only read: a form no rule knows is ``ask`` (for every other, ``deny``)."""
        for rule in self.rules:
            if not rule.programs:
                check = CHECKS[rule.check]
                if check.line is not None:
                    self._line_guards.append((rule, check.line))
                if check.argv is not None:
                    self._argv_guards.append((rule, check.argv))
                continue
            for program in rule.programs:
                by_program.setdefault(program, []).append(rule)
        self._rules_of: dict[str, tuple[Rule, ...]] = {
            program: tuple(sorted(entries, key=lambda r: SEVERITY[r.decision])) for program, entries in by_program.items()
        }
        self._by_program: dict[str, tuple[_Compiled, ...]] = {}
        if check_examples:
            self.check_examples()

    @property
    def compiled(self) -> int:
        """How many rules have their patterns compiled (all, unless ``lazy``)."""
        return len(self._compiled)

    def _entries(self, program: str) -> tuple[_Compiled, ...]:
        """The program's rules, most severe first, compiled on first use."""
        entries = self._by_program.get(program)
        if entries is None and program in self._rules_of:
            entries = tuple(self._compiled.get(r.name) or self._compile(r) for r in self._rules_of.get(program, ()))
            self._by_program[program] = entries
        return entries or ()

    def _compile(self, rule: Rule) -> _Compiled:
        compiled = self._compiled[rule.name] = _compile(rule)
        return compiled

    def check_examples(self) -> None:
        """Judge every rule's examples; raise :class:`RuleError` at the first that disagrees with its rule."""
        for rule in self.rules:
            for example in rule.examples:
                verdict = self.vet_line(example, fs=self.examples_fs)
                self.examples_checked += 1
                if verdict.rule != rule.name or verdict.decision != rule.decision:
                    raise RuleError(
                        f"rule {rule.name!r} ({rule.decision}): example {show(example)!r} was vetted "
                        f"{verdict.decision} by {verdict.rule!r}: {verdict.reason}"
                    )

    def programs(self) -> frozenset[str]:
        return frozenset(self._rules_of)

    def vet_line(self, line: str, fs: FileSystem | None = None) -> Verdict:
        """Judge a command line as an LLM writes it (never run through a shell)."""
        try:
            for rule, line_check in self._line_guards:
                if (detail := line_check(line)) is not None:
                    return Verdict(rule.decision, f"{rule.description}: {detail}", rule=rule.name)
            try:
                argv = lexer.split(line)
            except ValueError as exc:
                return Verdict("deny", f"cannot be parsed: {exc}", rule="unparseable")
            return self._vet(Subject(argv, fs or self.fs))
        except Exception as exc:  # fail closed: a policy bug must never let a command through
            return Verdict("deny", f"policy error ({exc.__class__.__name__}): refused", rule="policy-error")

    def vet_argv(self, argv: Sequence[str], fs: FileSystem | None = None) -> Verdict:
        """Judge an argv (as rule code and investigators build it): the same rules, no line guards."""
        try:
            return self._vet(Subject(tuple(str(a) for a in argv), fs or self.fs))
        except Exception as exc:  # fail closed
            return Verdict("deny", f"policy error ({exc.__class__.__name__}): refused", tuple(argv), "policy-error")

    def _vet(self, subject: Subject) -> Verdict:
        argv = subject.argv
        asked: Verdict | None = None
        for rule, argv_check in self._argv_guards:
            if (detail := argv_check(subject)) is None:
                continue
            verdict = Verdict(rule.decision, f"{rule.description}: {detail}", argv, rule.name)
            if rule.decision == "deny":
                return verdict
            asked = asked or verdict
        verdict = self._program_verdict(subject)
        if asked is not None and SEVERITY[asked.decision] < SEVERITY[verdict.decision]:
            return asked
        return verdict

    def _program_verdict(self, subject: Subject) -> Verdict:
        argv = subject.argv
        if not argv or not argv[0]:
            return Verdict("deny", "nothing to run", argv, "empty")
        program = program_name(argv[0])
        entries = self._entries(program)
        if not entries:
            return Verdict(
                "ask", f"{show(program)} is not a program this policy knows: a person must approve it", argv, "unknown-program"
            )
        misses: list[tuple[Mismatch, str]] = []
        for c in entries:
            detail = _applies(c, argv, subject)
            if detail is None:
                continue
            if c.form is None:
                reason = f"{program}: {c.rule.description}" + (f" ({detail})" if detail else "")
                return Verdict(c.rule.decision, reason, argv, c.rule.name)
            miss = mismatch(c.form, argv[2:] if c.rule.first else argv[1:], subject)
            if miss is None:
                return Verdict("allow", f"{program}: {c.rule.description}", argv, c.rule.name)
            misses.append((miss, c.rule.examples[0]))
        return self._unrecognized(program, argv, entries, misses)

    def _unrecognized(
        self, program: str, argv: tuple[str, ...], entries: tuple[_Compiled, ...], misses: list[tuple[Mismatch, str]]
    ) -> Verdict:
        paths = sorted((m.path for m, _ in misses if m.path is not None), key=lambda p: SEVERITY[p.decision])
        if paths:
            problem = paths[0]
            return Verdict(problem.decision, f"{program}: {problem.reason}", argv, problem.rule)
        if unbounded := next((m for m, _ in misses if m.unbounded), None):
            why = f"{program}: a read-only form, but unbounded: {unbounded.reason}; a person must approve it"
            return Verdict("ask", why, argv, "unbounded-read")
        allowed = [c.rule.examples[0] for c in entries if c.rule.decision == "allow"]
        if misses:
            why, example = misses[0][0].reason, misses[0][1]
        elif not allowed:
            why, example = "this policy knows no read-only form of it", ""
        else:
            why = f"no read-only form starts with {show(argv[1])}" if len(argv) > 1 else "it needs arguments"
            example = allowed[0]
        hint = f"; a read-only form looks like `{example}`" if example else ""
        if program in self.readers:
            return Verdict(
                "ask",
                f"{program}: not a recognized read-only form: {why}{hint}; a person must approve it",
                argv,
                "unrecognized-form",
            )
        return Verdict(
            "deny",
            f"{program}: not one of its read-only forms, and {program} can change the system: {why}{hint}",
            argv,
            "not-a-read-form",
        )
