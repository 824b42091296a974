"""Print the JSON schema of the audit result (``rigaudit.audit/1``).

rigaudit schema                          the schema, on stdout
rigaudit schema --transcript t.jsonl     also record it as a session
"""

from __future__ import annotations

import argparse

from rigaudit.orchestrator.command import Command
from rigaudit.orchestrator.commands._options import add_transcript_argument, screen, transcript_path
from rigaudit.orchestrator.session.query import query_session
from rigaudit.tools.schema.audit import AUDIT_SCHEMA, AuditResult
from rigaudit.tools.schema.events.catalog import SchemaShown


def _add(parser: argparse.ArgumentParser) -> None:
    add_transcript_argument(parser)


def _run(args: argparse.Namespace) -> int:
    event = SchemaShown(name=AUDIT_SCHEMA, document=AuditResult.model_json_schema(by_alias=True))
    with query_session("schema", screen(args), transcript_path(args)) as session:
        session.emit(event)
    return 0


COMMAND = Command("schema", "print the JSON schema of `audit --json` output", _add, _run, __doc__ or "")
