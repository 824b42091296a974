"""Placeholder judge (replaced by the full rule-based policy)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from tools.policy.verdict import Verdict

_READ_ONLY = {"uname", "dmesg", "lspci", "nvidia-smi", "systemctl", "systemd-detect-virt", "pveversion", "pct"}


def judge_argv(argv: Sequence[str]) -> Verdict:
    argv = tuple(argv)
    if argv and argv[0] in _READ_ONLY:
        return Verdict("allow", "read-only diagnostic", argv)
    return Verdict("deny", "not a known read-only diagnostic", argv)


def judge_command_line(line: str) -> Verdict:
    try:
        return judge_argv(shlex.split(line))
    except ValueError as exc:
        return Verdict("deny", f"cannot parse: {exc}")
