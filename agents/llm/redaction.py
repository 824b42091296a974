"""What the model is shown of what was read or run, redacted as the share bundle redacts it.

A file by what its path says it is (``redact_bytes``: credential files by their structure, environments by
the allow-list), a command's output by what the command prints (``redact_output``: ``env`` and ``printenv``
by the allow-list), anything else as text; the prompt's evidence summary, ``read_file`` and ``shell`` all go
through here, so a value the bundle would not give away never reaches the model either.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigaudit.tools.redact import redact_bytes, redact_output, redact_text
from rigaudit.tools.schema.evidence import Evidence


def file_text(text: str, path: str) -> str:
    """A file's text as read at ``path``, redacted by what the path says it is."""
    data = text.encode("utf-8", "surrogateescape")
    redacted = redact_bytes(data, path)
    return text if redacted is data else redacted.decode("utf-8", "surrogateescape")


def output_text(argv: Sequence[str], text: str) -> str:
    """What ``argv`` printed, redacted by what the command prints."""
    return redact_output(argv, text)


def evidence_text(evidence: Evidence) -> str:
    """An evidence item's recorded text, redacted by its kind: a file by its path, a command by its words."""
    if evidence.kind == "file":
        return file_text(evidence.raw, evidence.source)
    if evidence.kind == "command":
        return output_text(evidence.source.split(), evidence.raw)
    return redact_text(evidence.raw)
