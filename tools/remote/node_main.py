"""Entry point of the zipapp on the node: ``python3 -I -S rigaudit-node.pyz`` (or loaded from stdin).

The node's interpreter runs isolated from its site-packages (``-I -S``), so nothing installed there
matters: only the standard library and the modules inside the payload. :mod:`rigaudit.tools.hosts.local`
and :mod:`rigaudit.tools.hosts.nvml_local` import :mod:`anyio` at module level for their asynchronous
halves, which the node server never calls; an inert stand-in module satisfies that import.
"""

from __future__ import annotations

import sys
import types

MIN_PYTHON = (3, 9)


def _stand_in_anyio() -> None:
    try:
        import anyio  # noqa: F401
    except ImportError:
        stand_in = types.ModuleType("anyio", "Inert stand-in: the node server uses only synchronous code.")
        abc = types.ModuleType("anyio.abc", "Inert stand-in.")
        stand_in.abc = abc  # type: ignore[attr-defined]
        sys.modules["anyio"] = stand_in
        sys.modules["anyio.abc"] = abc


def main() -> int:
    if sys.version_info < MIN_PYTHON:
        sys.stderr.write(f"rigaudit node server: python3 >= {'.'.join(map(str, MIN_PYTHON))} needed on the node\n")
        return 3
    sys.dont_write_bytecode = True
    _stand_in_anyio()
    from rigaudit.tools.remote.node_server import main as serve

    return serve()
