"""What change a comparison can detect, said before it runs: the smallest true change found 80% of the time.

A change is called when its (Holm-adjusted) p is below alpha; with ``n`` units of log-scale spread ``sd``
the estimate's standard error is ``sd / sqrt(n)`` (paired: the log ratios of ``n`` cycles) or
``sd * sqrt(2 / n)`` (two sides of ``n``). A true change of ``(t(1 - a/2) + t(power)) * se`` on the log
scale is then found with that power, ``a`` being the share of alpha its test gets in Holm's first step
(the headline's weight over the family's; :func:`headline_share`). The figure is a planning figure:
the verdict still comes from the data.
"""

from __future__ import annotations

import math

from rigaudit.tools.bench.stats import growth, t_quantile

POWER = 0.8
HEADLINE_WEIGHT = 2.0 / 3.0
"""Output tok/s carries 2/3 of each level's weight in the Holm family (:mod:`rigaudit.tools.bench.compare`)."""


def headline_share(alpha: float, levels: int, arms: int = 1) -> float:
    """The alpha the headline test of one level and arm gets first in a family of ``levels`` x ``arms`` levels."""
    return alpha * HEADLINE_WEIGHT / max(1, levels * arms)


def detectable(sd: float, units: int, *, alpha: float, paired: bool, power: float = POWER) -> float | None:
    """The smallest relative change found with ``power`` at two-sided level ``alpha``; None below two units."""
    if units < 2 or not sd >= 0 or not 0 < alpha < 1:
        return None
    df = float(units - 1 if paired else 2 * units - 2)
    se = sd / math.sqrt(units) if paired else sd * math.sqrt(2.0 / units)
    return growth((t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)) * se)


def cycles_for(sd: float, change: float, *, alpha: float, power: float = POWER, most: int = 100) -> int | None:
    """The fewest paired cycles that detect ``change`` with ``power``; None when more than ``most`` would."""
    for n in range(2, most + 1):
        found = detectable(sd, n, alpha=alpha, paired=True, power=power)
        if found is not None and found <= change:
            return n
    return None
