"""Executing typed Actions through a Host: targets, the journal protocol, rollback, persist files, scripts.

- :mod:`rigaudit.tools.actions.targets`: Actions expanded into single values (``expand``).
- :mod:`rigaudit.tools.actions.ops`: read / set / compare one target through a Host.
- :mod:`rigaudit.tools.actions.execute`: ``apply_target`` (read, journal + fsync, write, verify, revert at once).
- :mod:`rigaudit.tools.actions.rollback`: ``rollback`` of a journal, newest change first.
- :mod:`rigaudit.tools.actions.persist`: the ``--persist`` configuration files.
- :mod:`rigaudit.tools.actions.script`: ``--emit-script`` rendering.

Only the targets are re-exported here: :mod:`rigaudit.tools.actions.journal` imports them, and the journal is
imported by the modules that execute.
"""

from rigaudit.tools.actions.targets import (
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
