"""The command policy: every command an agent or a rule asks for is judged before it runs."""

from tools.policy.judge import judge_argv, judge_command_line
from tools.policy.verdict import Decision, Verdict

__all__ = ["Decision", "Verdict", "judge_argv", "judge_command_line"]
