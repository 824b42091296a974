"""Texts redacted once: what a redaction of a text gave, and what it counted, kept by what it depended on.

The same text comes again wherever one process redacts one host more than once: a long file recorded again (an
audit recorded twice, a model shown a file a transcript already holds), a short path, ref or name that many events
repeat. A text's redaction is a function of the text (and, for identifiers, of the values learned so far: the key
holds :func:`._known.generation`, and a redaction that learned a value is not kept), so the kept result is the
result; what it counted is counted again for each use. At most ``most_chars`` characters of keys are kept; the
oldest go first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from rigaudit.tools.redact._tally import Tally

MOST_CHARS = 4_000_000
"""What the kept texts may hold at most, in characters (their results are about as long)."""

_Done = tuple[str, tuple[tuple[str, int], ...]]


class TextMemo:
    """Results of one redaction step, by key (the text first)."""

    def __init__(self, most_chars: int = MOST_CHARS) -> None:
        self.most_chars = most_chars
        self._done: dict[tuple[Hashable, ...], _Done] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def run(
        self,
        key: tuple[Hashable, ...],
        redact: Callable[[Tally], str],
        tally: Tally | None,
        *,
        keep: Callable[[], bool] = lambda: True,
    ) -> str:
        """``redact(counted)`` for ``key`` (done once while kept); its counts added to ``tally`` each time. ``keep``
        (asked after a redaction) says whether its result may be reused."""
        done = self._done.get(key)
        if done is None:
            counted = Tally()
            done = (redact(counted), tuple(counted.items()))
            if keep():
                self._put(key, done)
        if tally is not None:
            for kind, n in done[1]:
                tally.add(kind, n)
        return done[0]

    def _put(self, key: tuple[Hashable, ...], done: _Done) -> None:
        size = len(str(key[0]))
        if size > self.most_chars:
            return
        with self._lock:
            if key in self._done:
                return
            while self._done and self._chars + size > self.most_chars:
                oldest = next(iter(self._done))
                self._chars -= len(str(oldest[0]))
                del self._done[oldest]
            self._done[key] = done
            self._chars += size
