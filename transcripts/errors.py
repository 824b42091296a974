"""The one exception of this package: a file that cannot be read as a transcript."""

from __future__ import annotations

from rigaudit.tools.files.bounded import InputError


class TranscriptError(InputError):
    """Not a transcript, an unsupported version, an unreadable file: the message is one line."""
