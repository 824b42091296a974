"""Judge a command the way the agents' shell would, or list the command policy's rules.

  rigaudit policy check 'nvidia-smi -pm 1'    prints: deny <reason>
  rigaudit policy list                        prints every rule: name, decision, description

The verdict word comes first (allow, ask or deny); nothing is run. See tools/policy/rules for the
principle that separates ask from deny.
"""

from __future__ import annotations

import argparse

from rigaudit.orchestrator.command import Command
from rigaudit.tools.errors import UsageError
from rigaudit.tools.policy import POLICY, vet_command_line
from rigaudit.tools.policy.engine import FALLBACKS


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="policy_action", metavar="ACTION")
    check = sub.add_parser("check", help="vet one command line (quote it), print the verdict and the reason")
    check.add_argument("line", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command, as one quoted string")
    sub.add_parser("list", help="print the rules: name, decision, description")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _run(args: argparse.Namespace) -> int:
    action = getattr(args, "policy_action", None)
    if action == "list":
        rows = [(rule.name, rule.decision, rule.description) for rule in POLICY.rules] + list(FALLBACKS)
        width = max(len(name) for name, _, _ in rows)
        for name, decision, description in rows:
            print(f"{name:<{width}}  {decision:<5}  {_one_line(description)}")
        return 0
    if action == "check":
        if not args.line:
            raise UsageError("policy check: give the command to vet, quoted: rigaudit policy check 'nvidia-smi -L'")
        verdict = vet_command_line(" ".join(args.line))
        decided_by = f" [{verdict.rule}]" if verdict.rule else ""
        print(f"{verdict.decision} {_one_line(verdict.reason)}{decided_by}")
        return 0
    raise UsageError("policy: choose an action: check 'COMMAND' or list")


COMMAND = Command("policy", "vet a command (allow/ask/deny) or list the policy rules", _add, _run, __doc__ or "")
