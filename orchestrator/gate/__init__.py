"""The scheduler gate behind ``rigaudit check``: the rules alone, within a deadline, one verdict.

- :mod:`~rigaudit.orchestrator.gate.selection`: ``--only``/``--skip`` by check id or area;
- :mod:`~rigaudit.orchestrator.gate.expect`: ``--expect FILE``, a fleet's expected values as checks;
- :mod:`~rigaudit.orchestrator.gate.run`: the audit under a deadline, judged into a
  :class:`~rigaudit.tools.schema.check.CheckResult` (verdict, exit status, reason line);
- :mod:`~rigaudit.orchestrator.gate.render`: the reason line and the lines after it;
- :mod:`~rigaudit.orchestrator.gate.prometheus`: the node_exporter textfile;
- :mod:`~rigaudit.orchestrator.gate.watchdog`: the hard stop past the deadline.

Exit status (what NHC, Slurm's wrappers and node-problem-detector expect): 0 healthy, 1 a problem at or
above ``--fail-on``, 2 usage, 3 could not check, 4 rigaudit itself failed (could not check either).
This package imports nothing heavy on import: each module pulls in only what it uses.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType

HEALTHY, PROBLEM, USAGE, NOT_CHECKED, INTERNAL = 0, 1, 2, 3, 4
"""The gate's exit statuses."""

DEFAULT_DEADLINE_S = 20.0
"""Well inside Slurm's 60 s limit on a health check program, with room for the wrapper and ``scontrol``."""

_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"
_OFF = ("__all__", "1", "true")
"""The values of ``PYDANTIC_DISABLE_PLUGINS`` that turn every plugin off (pydantic's ``plugin/_loader.py``)."""
_LOADER = "pydantic.plugin._loader"


@contextmanager
def without_pydantic_plugins() -> Iterator[None]:
    """No pydantic plugin is loaded while the gate runs (``PYDANTIC_DISABLE_PLUGINS=__all__``, pydantic's own
    switch): finding plugins reads every installed distribution's entry points, and a plugin is third-party code
    (one observability plugin imports hundreds of modules) that has no place in a root prolog. A value already set
    is kept (``PYDANTIC_DISABLE_PLUGINS=`` empty turns them back on); the environment is restored afterwards.

    While plugins are off, pydantic's loader is stood in for (:func:`_no_plugin_loader`): the real one imports
    ``importlib.metadata`` (and zipfile, email, shutil...) at the top of its module only to find none."""
    if _PLUGINS in os.environ:
        with _no_plugin_loader() if os.environ[_PLUGINS] in _OFF else nullcontext():
            yield
        return
    os.environ[_PLUGINS] = "__all__"
    try:
        with _no_plugin_loader():
            yield
    finally:
        os.environ.pop(_PLUGINS, None)


@contextmanager
def without_cyclic_collector() -> Iterator[None]:
    """The cyclic garbage collector paused while the gate runs, as it was afterwards. A check is one short
    process, bounded by its deadline, whose garbage reference counting frees; the collector's passes while its
    300 modules load (80 of them here) find almost nothing and cost about 5% of the start
    (docs/performance.md, "Gate start")."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def _no_plugin_loader() -> Iterator[None]:
    """``pydantic.plugin._loader`` as a module whose ``get_plugins()`` gives none, which is what the real one
    gives with plugins off; any other name it is asked for comes from the real module, imported then (so a
    pydantic that asks its loader for more still works). Nothing is stood in for once the real one is loaded,
    and the stand-in is gone afterwards: a later model finds the real loader."""
    if _LOADER in sys.modules:
        yield
        return
    stand_in = ModuleType(_LOADER, "pydantic's plugin loader while plugins are off (rigaudit's gate)")

    def get_plugins() -> tuple[()]:
        return ()

    def real(name: str) -> object:
        if name.startswith("__"):  # the import system's questions (``__path__``...): a plain module's answers
            raise AttributeError(name)
        if sys.modules.get(_LOADER) is stand_in:
            del sys.modules[_LOADER]
        return getattr(importlib.import_module(_LOADER), name)

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = real  # type: ignore[method-assign]
    sys.modules[_LOADER] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(_LOADER) is stand_in:
            del sys.modules[_LOADER]


__all__ = [
    "DEFAULT_DEADLINE_S",
    "HEALTHY",
    "INTERNAL",
    "NOT_CHECKED",
    "PROBLEM",
    "USAGE",
    "without_cyclic_collector",
    "without_pydantic_plugins",
]
