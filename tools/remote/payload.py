"""The zipapp sent to a node without rigaudit, and the bootstrap that runs it from memory.

The payload holds exactly the modules the node side imports (:mod:`rigaudit.tools.remote.node_server` and what it
needs) plus the coordinator's own ``pynvml`` (pure Python, ctypes): no pydantic, no anyio. It is a
real zipapp (``python3 rigaudit-node.pyz`` runs it from a file), but over SSH it never touches the
node's disk: :data:`BOOTSTRAP` reads ``<length>\\n<zip bytes>`` from stdin, imports the modules
from memory, then serves the node server protocol on the same stdin/stdout. Nothing is left behind.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import zipfile
from functools import lru_cache
from pathlib import Path

from rigaudit.tools.core.errors import OperationError

MODULES: tuple[str, ...] = (
    "rigaudit",
    "rigaudit.tools",
    "rigaudit.tools.core",
    "rigaudit.tools.core.errors",
    "rigaudit.tools.core.record",
    "rigaudit.tools.redact",
    "rigaudit.tools.hosts",
    "rigaudit.tools.hosts.base",
    "rigaudit.tools.hosts.launch",
    "rigaudit.tools.hosts.local",
    "rigaudit.tools.hosts.nvml_local",
    "rigaudit.tools.remote",
    "rigaudit.tools.remote.protocol",
    "rigaudit.tools.remote.node_server",
    "rigaudit.tools.remote.node_main",
)
"""What the node imports, as dotted names; ``pynvml`` is added when the coordinator has it."""

OPTIONAL_MODULES: tuple[str, ...] = ("pynvml",)

MAIN = "from rigaudit.tools.remote.node_main import main\nraise SystemExit(main())\n"

BOOTSTRAP = """\
import io, sys, zipfile
from importlib.machinery import ModuleSpec
_in = sys.stdin.buffer
_size = int(_in.readline())
_zip = zipfile.ZipFile(io.BytesIO(_in.read(_size)))
_names = set(_zip.namelist())
class _PayloadFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        base = name.replace(".", "/")
        if base + "/__init__.py" in _names:
            return ModuleSpec(name, cls, origin=base + "/__init__.py", is_package=True)
        if base + ".py" in _names:
            return ModuleSpec(name, cls, origin=base + ".py")
        return None
    @staticmethod
    def create_module(spec):
        return None
    @staticmethod
    def exec_module(module):
        origin = module.__spec__.origin
        exec(compile(_zip.read(origin), "rigaudit-payload/" + origin, "exec"), module.__dict__)
sys.meta_path.insert(0, _PayloadFinder)
sys.dont_write_bytecode = True
from rigaudit.tools.remote.node_main import main
sys.exit(main())
"""


class PayloadError(OperationError):
    """A module the node side needs could not be found in this installation."""


def _source(module: str) -> tuple[str, bytes]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise PayloadError(f"{module}: no Python source to send to nodes")
    name = module.replace(".", "/") + ("/__init__.py" if spec.submodule_search_locations is not None else ".py")
    return name, Path(spec.origin).read_bytes()


@lru_cache(maxsize=1)
def build_payload() -> bytes:
    """The zipapp's bytes (deterministic: fixed timestamps, sorted names)."""
    members = [_source(m) for m in MODULES]
    for module in OPTIONAL_MODULES:
        try:
            members.append(_source(module))
        except PayloadError:
            continue  # no pynvml here: NVML reads on the node answer LIBRARY_NOT_FOUND
    members.append(("__main__.py", MAIN.encode()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in sorted(members):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def framed_payload() -> bytes:
    """What the coordinator writes to the bootstrap's stdin before speaking the protocol."""
    payload = build_payload()
    return f"{len(payload)}\n".encode() + payload


def bootstrap_command(python: str = "python3") -> str:
    """A shell-safe one-liner running :data:`BOOTSTRAP` with the node's ``python`` (isolated: ``-I -S``)."""
    encoded = base64.b64encode(BOOTSTRAP.encode()).decode("ascii")
    return f'{python} -I -S -c "import sys,base64;exec(base64.b64decode(sys.argv[1]))" {encoded}'


def write_zipapp(path: Path) -> Path:
    """Write the payload as a runnable file (``python3 -I -S PATH`` serves the protocol on stdio)."""
    data = build_payload()
    path.write_bytes(b"#!/usr/bin/env python3\n" + data)
    path.chmod(0o755)
    return path
