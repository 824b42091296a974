"""Argument types that turn an ordinary slip into a sensible value or one clear line (exit status 2)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from rigaudit.tools.core.errors import UsageError

_SCHEME = r"^[A-Za-z][A-Za-z0-9+.-]*://"
"""A pattern string (``re`` compiles it on first use: ``rigaudit check`` imports this module and compiles nothing)."""


def normalize_url(text: str, what: str = "--base-url") -> str:
    """``127.0.0.1:30000/v1`` is ``http://127.0.0.1:30000/v1`` (a server URL without a scheme); any scheme
    but http and https, or a URL with no host, is :class:`UsageError` with one line."""
    text = text.strip()
    if not re.match(_SCHEME, text):
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError as exc:
        raise UsageError(f"{what} {text}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{what} {text}: only http:// and https:// servers are supported")
    if not parts.hostname:
        raise UsageError(f"{what} {text}: no host in the URL (e.g. http://127.0.0.1:8000/v1)")
    return text


def url(text: str) -> str:
    """``type=`` for a server URL option."""
    try:
        return normalize_url(text, "")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None


MAX_SECONDS = 30 * 86400.0
"""The longest time limit taken (30 days): past ``threading.TIMEOUT_MAX`` a timer thread dies with a traceback."""


def positive_seconds(text: str) -> float:
    """``type=`` for a time limit: a number of seconds above 0 (0 would judge nothing), at most :data:`MAX_SECONDS`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} s: a time limit must be more than 0 seconds")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text} s: a time limit must be at most {MAX_SECONDS:.0f} s (30 days)")
    return value


positive_seconds.number = True  # type: ignore[attr-defined]


def number(
    what: str, *, above: float | None = None, least: float | None = None, infinite: bool = False
) -> Callable[[str], float]:
    """``type=`` for every other number option: a finite number (``nan`` never; ``inf`` only where ``infinite`` says
    it means something), more than ``above`` or at least ``least``; anything else is one line and exit status 2.
    Finer ranges (a confidence from 0.5 to 0.999) stay with the code that knows them."""
    bound = [f"more than {above:g}"] if above is not None else [f"at least {least:g}"] if least is not None else []
    rule = " and ".join([*bound, *([] if infinite else ["finite"])]) or "a number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number ({what})") from None
        wrong = math.isnan(value) or (math.isinf(value) and not infinite)
        wrong = wrong or (above is not None and not value > above) or (least is not None and not value >= least)
        if wrong:
            raise argparse.ArgumentTypeError(f"{text}: {what} must be {rule}")
        return value

    parse.__name__ = "number"
    parse.number = True  # type: ignore[attr-defined]
    parse.infinite = infinite  # type: ignore[attr-defined]
    return parse


__all__ = ["MAX_SECONDS", "normalize_url", "number", "positive_seconds", "url"]
