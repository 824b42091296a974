"""The shape of a policy rule: plain data, checked when the policy loads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from rigaudit.tools.policy.verdict import Decision

OperandKind = Literal["none", "read", "list", "grep", "match"]
"""How a form judges its operands (non-option arguments).

``none``: no operands; ``read``: paths whose contents are read (must lie under a readable root);
``list``: paths only listed or stat'ed (anything but a secret); ``grep``: a pattern then ``read`` paths
(the pattern may instead come from ``-e``); ``match``: each operand fully matches ``operand_re``.
"""

READ_PATH = "@read"
"""Use as an option's value pattern in :attr:`Form.valued` when the value is a path that is read."""


class RuleError(Exception):
    """A rule is malformed, or one of its examples is not judged the way the rule says."""


@dataclass(frozen=True)
class Form:
    """A read-only invocation, as a whitelist grammar: every argument must be accounted for.

    Options are matched exactly as written (``--opt=value`` forms need their own pattern in ``flags``,
    or the bare option in ``valued``, which also accepts ``--opt=value``). Patterns are full-match regexes.
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
    """Options (as named in ``valued`` or ``flags``) of which at least one must be present (a bound such as ``-n``)."""
    recursive: tuple[str, ...] = ()
    """Options (regexes) that make ``read`` operands whole trees."""


@dataclass(frozen=True)
class Rule:
    """One named rule. ``examples`` are command lines the policy must judge ``decision`` by this very rule.

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
