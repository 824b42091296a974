"""A session: one command's run, whose typed events go to every consumer (UI, transcript, JSON)."""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rigaudit.tools.core.version import rigaudit_version
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted, Warning_
from rigaudit.tools.schema.events.sink import EventSink
from rigaudit.tools.schema.events.union import Event


def versions() -> dict[str, str]:
    return {"rigaudit": rigaudit_version(), "python": platform.python_version(), "platform": sys.platform}


def _consumer_name(consumer: object) -> str:
    name = type(consumer).__name__
    return "the display" if "UI" in name or "Terminal" in name else f"the {name} output"


class Session:
    """Fans events out to consumers; a consumer that fails is dropped with a warning, never the session."""

    def __init__(self, command: str, consumers: list[EventSink], transcript_path: Path | None, *, announce: bool = True) -> None:
        self.command = command
        self.consumers = list(consumers)
        self.transcript_path = transcript_path
        self.events: list[Event] = []
        self.exit_code = 0
        self.detached: list[str] = []
        """Why each consumer that failed was detached (``RuntimeError: ...``)."""
        self.announce = announce
        """Say a detached consumer on stderr at once (the display may have been the one to fail)."""
        self._writer: Any = None

    def emit(self, event: Event) -> None:
        self.events.append(event)
        for consumer in list(self.consumers):
            try:
                consumer(event)
            except Exception as exc:  # a broken display or full disk must not lose the work
                self.consumers.remove(consumer)
                why = f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
                self.detached.append(why)
                if self.announce:
                    print(f"rigaudit: warning: {_consumer_name(consumer)} failed and was detached ({why})", file=sys.stderr)
                self.emit(Warning_(text=f"event consumer {consumer!r} failed and was detached: {exc}"))

    def open_transcript(self) -> None:
        from rigaudit.transcripts.store import default_transcript_path
        from rigaudit.transcripts.writer import TranscriptWriter

        path = self.transcript_path or default_transcript_path(self.command)
        try:
            self._writer = TranscriptWriter(path)
        except OSError as exc:
            self.emit(Warning_(text=f"no transcript: cannot write {path}: {exc.strerror or exc}"))
            return
        self.transcript_path = path
        self.consumers.insert(0, self._writer)

    def close(self, exit_code: int, reason: str = "") -> None:
        self.emit(SessionEnded(exit_code=exit_code, reason=reason))
        for consumer in self.consumers:
            close = getattr(consumer, "close", None)
            if callable(close):
                close()


@contextmanager
def open_session(
    command: str,
    *,
    consumers: list[EventSink],
    transcript: Path | None = None,
    record: bool = True,
    host: str = "",
    source: str = "",
    options: dict[str, Any] | None = None,
    announce: bool = True,
) -> Iterator[Session]:
    """Start a session, record it unless ``record`` is false, and always close it (even on Ctrl-C); ``announce=False``
    leaves a detached consumer to the caller (:attr:`Session.detached`) instead of a warning on stderr."""
    session = Session(command, consumers, transcript, announce=announce)
    if record:
        session.open_transcript()
    session.emit(SessionStarted(command=command, versions=versions(), host=host, source=source, options=options or {}))
    try:
        yield session
    except KeyboardInterrupt:
        session.close(130, "interrupted")
        raise
    except BaseException as exc:
        session.close(getattr(exc, "exit_code", 1), f"{exc.__class__.__name__}: {exc}")
        raise
    session.close(session.exit_code)
