"""The scheduler gate behind ``rigaudit check``: the rules alone, within a deadline, one verdict.

- :mod:`~rigaudit.orchestrator.gate.selection`: ``--only``/``--skip`` by check id or area;
- :mod:`~rigaudit.orchestrator.gate.expect`: ``--expect FILE``, a fleet's expected values as checks;
- :mod:`~rigaudit.orchestrator.gate.run`: the audit under a deadline, judged into a
  :class:`~rigaudit.tools.model.check.CheckResult` (verdict, exit status, reason line);
- :mod:`~rigaudit.orchestrator.gate.render`: the reason line and the lines after it;
- :mod:`~rigaudit.orchestrator.gate.prometheus`: the node_exporter textfile;
- :mod:`~rigaudit.orchestrator.gate.watchdog`: the hard stop past the deadline.

Exit status (what NHC, Slurm's wrappers and node-problem-detector expect): 0 healthy, 1 a problem at or
above ``--fail-on``, 2 usage, 3 could not check, 4 rigaudit itself failed (could not check either).
This package imports nothing heavy on import: each module pulls in only what it uses.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

HEALTHY, PROBLEM, USAGE, NOT_CHECKED, INTERNAL = 0, 1, 2, 3, 4
"""The gate's exit statuses."""

DEFAULT_DEADLINE_S = 20.0
"""Well inside Slurm's 60 s limit on a health check program, with room for the wrapper and ``scontrol``."""

_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


@contextmanager
def without_pydantic_plugins() -> Iterator[None]:
    """No pydantic plugin is loaded while the gate runs (``PYDANTIC_DISABLE_PLUGINS=__all__``, pydantic's own
    switch): finding plugins reads every installed distribution's entry points, and a plugin is third-party code
    (one observability plugin imports hundreds of modules) that has no place in a root prolog. A value already set
    is kept (``PYDANTIC_DISABLE_PLUGINS=`` empty turns them back on); the environment is restored afterwards."""
    if _PLUGINS in os.environ:
        yield
        return
    os.environ[_PLUGINS] = "__all__"
    try:
        yield
    finally:
        os.environ.pop(_PLUGINS, None)


__all__ = ["DEFAULT_DEADLINE_S", "HEALTHY", "INTERNAL", "NOT_CHECKED", "PROBLEM", "USAGE", "without_pydantic_plugins"]
