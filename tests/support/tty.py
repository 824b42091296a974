"""Drive rigaudit in a pseudo-terminal, as a person at a keyboard would: type, Ctrl-D, Ctrl-C, read the screen.

:func:`spawn` starts ``python -m rigaudit ARGS`` with a pty as its controlling terminal (so Ctrl-C is
a real SIGINT from the terminal, Ctrl-D a real end of input) at a given width. :meth:`Tty.expect`
waits for text to appear (never a sleep: it returns as soon as it is there, and fails after a
deadline with what the screen showed).
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")
CTRL_C = b"\x03"
CTRL_D = b"\x04"
DEADLINE_S = 90.0


def plain(text: str) -> str:
    """``text`` without terminal escape sequences and carriage returns."""
    return _ANSI.sub("", text)


@dataclass
class Tty:
    pid: int
    fd: int
    raw: bytearray = field(default_factory=bytearray)
    status: int | None = None

    @property
    def text(self) -> str:
        return plain(self.raw.decode("utf-8", "replace"))

    @property
    def words(self) -> str:
        """:attr:`text` with every run of white space one space: a message the terminal wrapped reads whole."""
        return " ".join(self.text.split())

    def _read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; ``False`` at end of output."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not chunk:
            return False
        self.raw += chunk
        return True

    def expect(self, needle: str, *, after: int = 0, deadline_s: float = DEADLINE_S) -> int:
        """Wait until ``needle`` shows (at or after character ``after`` of :attr:`text`); its end offset."""
        end = time.monotonic() + deadline_s
        while True:
            at = self.text.find(needle, after)
            if at >= 0:
                return at + len(needle)
            if time.monotonic() > end or not self._read(min(1.0, max(0.0, end - time.monotonic()))):
                if (at := self.text.find(needle, after)) >= 0:
                    return at + len(needle)
                raise AssertionError(f"{needle!r} never showed; the screen:\n{self.text[-4000:]}")

    def send(self, data: bytes | str) -> None:
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def wait(self, deadline_s: float = DEADLINE_S) -> int:
        """Read until the child exits; its exit status (128 + N for a signal N)."""
        end = time.monotonic() + deadline_s
        while self._read(0.5):
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = status
                while self._read(0.1):
                    pass
                break
            if time.monotonic() > end:
                os.kill(self.pid, signal.SIGKILL)
                raise AssertionError(f"still running after {deadline_s} s; the screen:\n{self.text[-4000:]}")
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        code = os.waitstatus_to_exitcode(self.status)
        return code if code >= 0 else 128 - code


def spawn(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cols: int = 100,
    rows: int = 50,
    program: Sequence[str] = ("-m", "rigaudit"),
) -> Tty:
    """``python -m rigaudit ARGS`` (``python PROGRAM ARGS``) on a new pseudo-terminal of ``cols`` x ``rows``."""
    environment = {**os.environ, **(env or {}), "COLUMNS": str(cols), "LINES": str(rows), "TERM": "xterm-256color"}
    environment.pop("NO_COLOR", None)
    argv = [sys.executable, *program, *args]
    pid, fd = os.forkpty()
    if pid == 0:  # the child: size its terminal, then exec at once
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(sys.executable, argv, environment)
        finally:
            os._exit(127)
    return Tty(pid, fd)
