"""Where the P2P benchmark's result is saved for the audit, and its schema: what the ``p2p.bandwidth`` check
needs without importing the benchmark's records (``rigaudit check`` starts as a prolog)."""

from __future__ import annotations

from pathlib import Path

P2P_SCHEMA = "rigaudit.p2p/1"
DEFAULT_PATH = Path("/var/tmp/rigaudit/p2p.json")

__all__ = ["DEFAULT_PATH", "P2P_SCHEMA"]
