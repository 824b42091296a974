"""The command policy: every command an agent or a rule asks for is vetted before it runs."""

from rigaudit.tools.policy.engine import Policy
from rigaudit.tools.policy.fsview import LEXICAL, LIVE, FileSystem, ModelFileSystem
from rigaudit.tools.policy.schema import Form, Rule, RuleError
from rigaudit.tools.policy.verdict import Decision, Verdict
from rigaudit.tools.policy.vet import POLICY, filesystem_for, vet_argv, vet_command_line

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
    "vet_argv",
    "vet_command_line",
]
