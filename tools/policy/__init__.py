"""The command policy: every command an agent or a rule asks for is judged before it runs."""

from rigaudit.tools.policy.engine import Policy
from rigaudit.tools.policy.judge import POLICY, judge_argv, judge_command_line
from rigaudit.tools.policy.schema import Form, Rule, RuleError
from rigaudit.tools.policy.verdict import Decision, Verdict

__all__ = ["POLICY", "Decision", "Form", "Policy", "Rule", "RuleError", "Verdict", "judge_argv", "judge_command_line"]
