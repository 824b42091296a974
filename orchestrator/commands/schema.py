"""Print the JSON schema of the audit result (``rigaudit.audit/1``)."""

from __future__ import annotations

import argparse
import json

from rigaudit.orchestrator.command import Command
from rigaudit.tools.model.audit import AuditResult


def _add(parser: argparse.ArgumentParser) -> None:
    del parser


def _run(args: argparse.Namespace) -> int:
    del args
    print(json.dumps(AuditResult.model_json_schema(by_alias=True), indent=2))
    return 0


COMMAND = Command("schema", "print the JSON schema of `audit --json` output", _add, _run, __doc__ or "")
