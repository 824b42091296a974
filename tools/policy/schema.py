"""The shape of a policy rule: plain data, checked when the policy loads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.policy.verdict import Decision

OperandKind = Literal["none", "read", "list", "grep", "match"]
"""How a form vets its operands (non-option arguments).

``none``: no operands; ``read``: paths whose contents are read (must lie under a readable root);
``list``: paths only listed or stat'ed (anything but a secret); ``grep``: a pattern then ``read`` paths
(the pattern may instead come from ``-e``); ``match``: each operand fully matches ``operand_re``.
"""

READ_PATH = "@read"
"""Use as an option's value pattern in :attr:`Form.valued` when the value is a path that is read."""


class RuleError(OperationError):
    """A rule is malformed, or one of its examples is not vetted the way the rule says."""


class Form(Record):
    """A read-only invocation, as a whitelist grammar: every argument must be accounted for.

    Options are matched as written, and, for a ``getopt`` program, in every spelling the program
    accepts: bundled or split short options (``-x -x`` = ``-xx``), a short option's value attached
    or next (``-n20`` = ``-n 20``), a long option's value after ``=`` or next (``--lines=20`` =
    ``--lines 20``). Patterns are full-match regexes.
    """

    flags: tuple[str, ...] = ()
    """Self-contained options (regexes), e.g. ``-[lah]+`` or ``--format=[a-z,]+``."""
    valued: Mapping[str, str] = field(default_factory=dict)
    """Options that take the next argument as their value: option -> value regex (or :data:`READ_PATH`)."""
    verbs: tuple[str, ...] = ()
    """When set, the first operand must be one of these (``systemctl status ...``)."""
    operands: OperandKind = "none"
    operand_re: str = ""
    min_operands: int = 0
    max_operands: int | None = None
    required: tuple[str, ...] = ()
    """Options (as named in ``valued`` or ``flags``) of which at least one must be present (a bound such as ``-n``):
    without one, the read is unbounded, and only a person may let it run (``ask``)."""
    recursive: tuple[str, ...] = ()
    """Options (regexes) that make ``read`` operands whole trees, or ``list`` operands recursive listings."""
    getopt: bool = False
    """The program parses its options with getopt(_long): see the class docstring."""
    follows: bool = True
    """Whether a ``list`` operand that is a link is followed (``ls DIR-LINK`` lists the target)."""
    no_follow: tuple[str, ...] = ()
    """Options (regexes) under which a ``list`` operand's final link is not followed (``ls -l``, ``stat``)."""
    follow: tuple[str, ...] = ()
    """Options (regexes) that make a ``list`` operand's final link followed (``stat -L``)."""
    follow_all: tuple[str, ...] = ()
    """Options (regexes) that follow every link met while recursing (``ls -L -R``): a recursive listing can then
    reach any tree (``/proc/1/root``, a link to ``/``), so it is judged as a recursive listing of everything."""
    unbounded: tuple[str, ...] = ()
    """Options that make the read run until killed (``-f``, ``-w``, ``-l N``): accepted, but only with a person (``ask``)."""
    depth: str = ""
    """For a program that lists recursively by default (``find``): the option whose value 0 or 1 keeps it one level."""


class Rule(Record):
    """One named rule. ``examples`` are command lines the policy must give ``decision`` by this very rule.

    A rule with no ``programs`` is a guard: it applies to every command, through its named ``check``
    (see :mod:`rigaudit.tools.policy.checks`). A program rule applies when all of its conditions hold; an
    ``allow`` rule needs a ``form`` that the whole argument list parses as.
    """

    name: str
    decision: Decision
    description: str
    examples: tuple[str, ...]
    programs: tuple[str, ...] = ()
    check: str = ""
    first: tuple[str, ...] = ()
    """The first argument (a subcommand such as ``topo``) must be one of these."""
    unless_first: tuple[str, ...] = ()
    """The rule does not apply when the first argument is one of these."""
    any_arg: tuple[str, ...] = ()
    """Regexes: the rule applies when some argument fully matches one."""
    unless_only: tuple[str, ...] = ()
    """Regexes: the rule does not apply when there are arguments and every one fully matches one (``--version``)."""
    min_args: int = 0
    form: Form | None = None
    reads_only: bool = False
    """For an ``allow`` rule: its programs can only read, so a form it does not know is ``ask``.

    Every other program this policy knows can change the system (or reach the network, or run code):
    outside its read-only forms it is ``deny``, so that no spelling a deny rule did not foresee
    (an abbreviation, an alias) runs without a person.
    """
