"""Judge a command the way the agents' shell would, or list the command policy's rules.

  rigaudit policy check 'nvidia-smi -pm 1'    prints: deny <reason>
  rigaudit policy list                        prints every rule: name, decision, description
  rigaudit policy check --transcript t.jsonl 'lspci -vv'   also records the verdict (options before COMMAND)

The verdict word comes first (allow, ask or deny); nothing is run. See tools/policy/rules for the
principle that separates ask from deny.
"""

from __future__ import annotations

import argparse

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.session.query import query_session
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.policy import POLICY, vet_command_line
from rigaudit.tools.policy.engine import FALLBACKS
from rigaudit.tools.schema.events.catalog import PolicyListed, PolicyRule, PolicyVerdict
from rigaudit.tools.schema.events.union import Event


def _add(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="policy_action", metavar="ACTION")
    check = sub.add_parser("check", help="vet one command line (quote it), print the verdict and the reason")
    check.add_argument("line", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command, as one quoted string")
    add_transcript_argument(check)  # before COMMAND: everything after it is the command
    listing = sub.add_parser("list", help="print the rules: name, decision, description")
    add_transcript_argument(listing)


def _event(args: argparse.Namespace) -> Event:
    action = getattr(args, "policy_action", None)
    if action == "list":
        rows = [(rule.name, rule.decision, rule.description) for rule in POLICY.rules] + list(FALLBACKS)
        return PolicyListed(rules=[PolicyRule(name=name, decision=decision, description=text) for name, decision, text in rows])
    if action == "check":
        if not args.line:
            raise UsageError("policy check: give the command to vet, quoted: rigaudit policy check 'nvidia-smi -L'")
        line = " ".join(args.line)
        verdict = vet_command_line(line)
        return PolicyVerdict(line=line, decision=verdict.decision, reason=verdict.reason, rule=verdict.rule)
    raise UsageError("policy: choose an action: check 'COMMAND' or list")


def _run(args: argparse.Namespace) -> int:
    event = _event(args)
    with query_session("policy", screen(args), transcript_path(args)) as session:
        session.emit(event)
    return 0


COMMAND = Command("policy", "vet a command (allow/ask/deny) or list the policy rules", _add, _run, __doc__ or "")
