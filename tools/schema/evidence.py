"""Evidence: one fact read from a host, with where it came from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

EvidenceKind = Literal["file", "dir", "link", "command", "nvml"]


class Evidence(BaseModel):
    """What was read, from where, and what came back (raw text, or the error)."""

    model_config = ConfigDict(frozen=True)

    ref: str
    """Stable reference cited by findings, e.g. ``file:/proc/cmdline`` or ``nvml:nvmlDeviceGetCount()``."""
    kind: EvidenceKind
    source: str
    ok: bool
    raw: str = ""
    """Text as read, truncated for display; binary files are summarised."""
    error: str | None = None
