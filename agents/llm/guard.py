"""Tests never reach a real model: with ``RIGAUDIT_BLOCK_REAL_LLM`` set, only loopback endpoints are allowed."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from rigaudit.agents.llm.errors import RealModelBlocked

BLOCK_ENV = "RIGAUDIT_BLOCK_REAL_LLM"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ensure_allowed(base_url: str | None) -> None:
    """Raise :class:`RealModelBlocked` when real models are blocked and ``base_url`` is not loopback."""
    if os.environ.get(BLOCK_ENV, "") in ("", "0"):
        return
    url = base_url or OPENAI_DEFAULT_URL
    if not is_loopback_url(url):
        raise RealModelBlocked(f"{BLOCK_ENV} is set: refusing to send prompts to {url} (only loopback endpoints are allowed)")
