"""The planner: problem findings become one plan, a graph of steps ranked by what each buys for its risk.

The work lives in :mod:`rigaudit.orchestrator.plan` (graph, gains, measurements); this module is its entry point.
"""

from __future__ import annotations

from rigaudit.orchestrator.plan import build_plan, rank
from rigaudit.orchestrator.plan.graph import SYMPTOM_CAUSES

__all__ = ["SYMPTOM_CAUSES", "build_plan", "rank"]
