"""Executing typed Actions through a Host: targets, the journal protocol, rollback, persist files, scripts.

- :mod:`tools.actions.targets`: Actions expanded into single values (``expand``).
- :mod:`tools.actions.ops`: read / set / compare one target through a Host.
- :mod:`tools.actions.execute`: ``apply_target`` (read, journal + fsync, write, verify, revert at once).
- :mod:`tools.actions.rollback`: ``rollback`` of a journal, newest change first.
- :mod:`tools.actions.persist`: the ``--persist`` configuration files.
- :mod:`tools.actions.script`: ``--emit-script`` rendering.

Only the targets are re-exported here: :mod:`tools.journal` imports them, and the journal is
imported by the modules that execute.
"""

from tools.actions.targets import (
    AnyTarget,
    ConfigFileTarget,
    ModuleTarget,
    PciRegisterTarget,
    ServiceTarget,
    Target,
    ValueFileTarget,
    expand,
    sysctl_path,
)

__all__ = [
    "AnyTarget",
    "ConfigFileTarget",
    "ModuleTarget",
    "PciRegisterTarget",
    "ServiceTarget",
    "Target",
    "ValueFileTarget",
    "expand",
    "sysctl_path",
]
