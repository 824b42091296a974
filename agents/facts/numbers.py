"""Numbers as a kernel writes them: ASCII digits, at most 19 (a 64-bit count).

``str.isdecimal()`` takes other scripts' digits and any length; ``int()`` then refuses a run past 4,300 digits
(Python's guard against quadratic parsing) with a ValueError that would end an investigator. What no kernel writes,
a crafted snapshot or a user's process can: it reads as no number here.
"""

from __future__ import annotations

import re

_COUNT = r"[0-9]{1,19}"


def count(text: str | None) -> int | None:
    """``text`` (already stripped) as a non-negative integer, or ``None`` where it is no kernel's number."""
    return int(text) if text is not None and re.fullmatch(_COUNT, text) else None


__all__ = ["count"]
