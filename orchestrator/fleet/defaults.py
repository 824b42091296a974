"""The fleet's defaults that the audit command's options show (its parser reads them without the fleet's code)."""

from __future__ import annotations

DEFAULT_MAX_CONNECTIONS = 16
DEFAULT_HOST_TIMEOUT_S = 120.0
