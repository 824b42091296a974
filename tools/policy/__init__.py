"""The command policy: every command an agent or a rule asks for is judged before it runs."""

from rigaudit.tools.policy.engine import Policy
from rigaudit.tools.policy.fsview import LEXICAL, LIVE, FileSystem, ModelFileSystem
from rigaudit.tools.policy.judge import POLICY, filesystem_for, judge_argv, judge_command_line
from rigaudit.tools.policy.schema import Form, Rule, RuleError
from rigaudit.tools.policy.verdict import Decision, Verdict

__all__ = [
    "LEXICAL",
    "LIVE",
    "POLICY",
    "Decision",
    "FileSystem",
    "Form",
    "ModelFileSystem",
    "Policy",
    "Rule",
    "RuleError",
    "Verdict",
    "filesystem_for",
    "judge_argv",
    "judge_command_line",
]
