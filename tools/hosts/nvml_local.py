"""The local NVML facade: ``pynvml`` calls by C name, with JSON results as snapshots record them.

``await facade.call("nvmlDeviceGetPciInfo", 0)`` calls ``pynvml.nvmlDeviceGetPciInfo(handle_of_0)``
and returns ``{"busIdLegacy": ..., "domain": ..., ..., "busId": ...}``: device indices become
handles (argument 0 of ``nvmlDevice*`` functions, and argument 1 of the two-device ones);
``nvmlDeviceGetFieldValues(device, field, scope, field, scope, ...)`` takes its field ids in pairs;
ctypes structs become dicts of their fields, tuples become lists, process lists become
``[{"pid", "usedGpuMemory"}]``. Errors are NVML return-code names without ``NVML_ERROR_``.

``nvmlInit`` runs once, lazily; when it fails every later call returns that same error. Where the library is not
on the loader's path and the NVIDIA GPU Operator's driver container holds it (its root is mounted on the host at
``/run/nvidia/driver``), that copy is loaded first, so a gate run on the node sees the GPUs.
Only read functions are called (``Get``/``Is``/``Query``...); setters, resets and event
registration return ``NO_PERMISSION`` without reaching the library: auditing never changes a GPU.
Calls are blocking C calls, so they run in a worker thread, one at a time, each time-limited.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import math
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import anyio

from rigaudit.tools.hosts.base import JsonValue, NvmlResult

INIT_FUNCTIONS = frozenset({"nvmlInit", "nvmlInit_v2", "nvmlInitWithFlags"})
TWO_DEVICE_FUNCTIONS = frozenset({"nvmlDeviceGetP2PStatus", "nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceOnSameBoard"})
FIELD_VALUE_FUNCTIONS = frozenset({"nvmlDeviceGetFieldValues"})
"""Called as ``(device, field id, scope id, field id, scope id, ...)``: the pairs become pynvml's list of tuples."""
_NO_DEVICE_ARG = r"nvmlDevice(?:GetHandleBy\w+|GetCount(?:_v2)?)"
_READ_ONLY = (
    r"nvml(?:Device|System|Unit|Vgpu\w*?|GpuInstance|ComputeInstance|Gpm\w*?)?(?:Get|Is|Query|OnSameBoard)\w*"
    r"|nvmlErrorString|nvmlDeviceWorkloadPowerProfileGet\w*"
)
DEFAULT_CALL_TIMEOUT_S = 30.0
OPERATOR_ROOT = "/run/nvidia/driver"
"""The GPU Operator's driver container root as the host sees it (the Operator's ``driver.root``)."""
OPERATOR_LIBRARIES = tuple(
    f"{OPERATOR_ROOT}{folder}/libnvidia-ml.so.1"
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
)


def _folders(path: str) -> list[str]:
    """The folders above ``path``, up to ``/``."""
    folders = [os.path.dirname(path)]
    while folders[-1] != os.path.dirname(folders[-1]):
        folders.append(os.path.dirname(folders[-1]))
    return folders


def _root_only(info: os.stat_result) -> bool:
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def root_owned(path: str) -> str | None:
    """The real path of ``path`` where it is a regular file of root's, and every folder above it, as named and as
    resolved, is root's and writable by no one else (a sticky one aside): a library fit to load, by a name no other
    user can switch to a file of theirs."""
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode) or not _root_only(info):
            return None
        for folder in dict.fromkeys((*_folders(os.path.abspath(path)), *_folders(real))):
            info = os.stat(folder)
            if not _root_only(info) and not (info.st_uid == 0 and info.st_mode & stat.S_ISVTX):
                return None
    except OSError:
        return None
    return real


def preload(path: str) -> bool:
    """Load ``path`` into the process so that pynvml's ``libnvidia-ml.so.1`` resolves to it (by its soname)."""
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def is_read_only(fn: str) -> bool:
    return fn in INIT_FUNCTIONS or re.fullmatch(_READ_ONLY, fn) is not None


def device_arg_positions(fn: str, nargs: int) -> tuple[int, ...]:
    """Which arguments of ``fn`` are device indices to turn into handles."""
    if not fn.startswith("nvmlDevice") or re.fullmatch(_NO_DEVICE_ARG, fn) or nargs == 0:
        return ()
    if fn in TWO_DEVICE_FUNCTIONS and nargs >= 2:
        return (0, 1)
    return (0,)


def to_json(value: Any) -> JsonValue:
    """A pynvml result as a JSON value (see the module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).split(b"\x00", 1)[0].decode("utf-8", errors="replace")
    if isinstance(value, ctypes._Pointer):
        return None
    if isinstance(value, ctypes._SimpleCData):
        return to_json(value.value)
    if isinstance(value, ctypes.Array):
        return [to_json(item) for item in value]
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        names = [field[0] for field in value._fields_]
        if "pid" in names and "usedGpuMemory" in names:
            kept = ("pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId")
            return {name: to_json(getattr(value, name)) for name in kept if name in names}
        return {name: to_json(getattr(value, name)) for name in names}
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        if "pid" in attributes and "usedGpuMemory" in attributes:
            return {"pid": to_json(attributes["pid"]), "usedGpuMemory": to_json(attributes["usedGpuMemory"])}
        return {str(k): to_json(v) for k, v in attributes.items() if not str(k).startswith("_")}
    return str(value)


def error_name(exc: BaseException, module: ModuleType | None) -> str:
    """``NVMLError(NVML_ERROR_NOT_SUPPORTED)`` -> ``NOT_SUPPORTED``; anything else ``UNKNOWN``."""
    nvml_error = getattr(module, "NVMLError", None) if module is not None else None
    if isinstance(nvml_error, type) and isinstance(exc, nvml_error):
        code = getattr(exc, "value", None)
        for name in dir(module):
            if name.startswith("NVML_ERROR_") and getattr(module, name) == code:
                return name[len("NVML_ERROR_") :]
        return "UNKNOWN"
    if isinstance(exc, TypeError):
        return "INVALID_ARGUMENT"
    return "UNKNOWN"


class NvmlFacade:
    """NVML over ``pynvml`` for one host. ``module`` injects a stand-in library (tests)."""

    def __init__(
        self,
        *,
        module: ModuleType | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        libraries: Sequence[str] = OPERATOR_LIBRARIES,
        loader: Callable[[str], bool] = preload,
        trusted: Callable[[str], str | None] = root_owned,
    ) -> None:
        self._module = module
        self._libraries = tuple(libraries)
        self._loader = loader
        self._trusted = trusted
        self._lock = threading.Lock()
        self._initialized = False
        self._init_error: str | None = None
        self._tried = False
        self._handles: dict[int, object] = {}
        self.call_timeout_s = call_timeout_s

    async def call(self, fn: str, *args: int) -> NvmlResult:
        result: NvmlResult | None = None
        with anyio.move_on_after(self.call_timeout_s):
            result = await anyio.to_thread.run_sync(self._call_sync, fn, tuple(args), abandon_on_cancel=True)
        return result if result is not None else NvmlResult(fn, tuple(args), error="TIMEOUT")

    async def aclose(self) -> None:
        if self._initialized:
            await anyio.to_thread.run_sync(self._shutdown_sync)

    # -- worker-thread side ---------------------------------------------------------------

    def _load(self) -> ModuleType | None:
        if self._module is None:
            try:
                self._module = importlib.import_module("pynvml")
            except ImportError:
                return None
        return self._module

    def _init_locked(self, fn: str, args: tuple[int, ...]) -> str | None:
        if self._tried:
            return self._init_error
        self._tried = True
        module = self._load()
        if module is None:
            self._init_error = "LIBRARY_NOT_FOUND"
            return self._init_error
        self._init_error = self._init_module(module, fn, args)
        if self._init_error == "LIBRARY_NOT_FOUND" and self._preload_operator_copy():
            self._init_error = self._init_module(module, fn, args)
        self._initialized = self._init_error is None
        return self._init_error

    @staticmethod
    def _init_module(module: ModuleType, fn: str, args: tuple[int, ...]) -> str | None:
        try:
            if fn == "nvmlInitWithFlags" and args:
                module.nvmlInitWithFlags(args[0])
            else:
                module.nvmlInit()
        except Exception as exc:
            return error_name(exc, module)
        return None

    def _preload_operator_copy(self) -> bool:
        """The GPU Operator's copy of the library, where one is there and root's alone, loaded by its real path (a
        link someone else could switch between the check and the load is never followed again)."""
        real = (self._trusted(path) for path in self._libraries if os.path.exists(path))
        return any(path is not None and self._loader(path) for path in real)

    def _handle(self, module: ModuleType, index: int) -> object:
        if index not in self._handles:
            self._handles[index] = module.nvmlDeviceGetHandleByIndex(index)
        return self._handles[index]

    def _call_sync(self, fn: str, args: tuple[int, ...]) -> NvmlResult:
        with self._lock:
            error = self._init_locked(fn, args)
            if error is not None:
                return NvmlResult(fn, args, error=error)
            if fn in INIT_FUNCTIONS or fn == "nvmlShutdown":
                return NvmlResult(fn, args)  # the facade owns the library's lifetime
            module = self._module
            assert module is not None
            function = getattr(module, fn, None) if fn.startswith("nvml") else None
            if not callable(function):
                return NvmlResult(fn, args, error="FUNCTION_NOT_FOUND")
            if not is_read_only(fn):
                return NvmlResult(fn, args, error="NO_PERMISSION")
            try:
                if fn.startswith("nvmlDeviceGetHandleByIndex") and args:
                    self._handle(module, args[0])
                    return NvmlResult(fn, args, value=args[0])  # a handle is written as its index
                call_args: list[object] = list(args)
                for position in device_arg_positions(fn, len(args)):
                    call_args[position] = self._handle(module, args[position])
                if fn in FIELD_VALUE_FUNCTIONS:
                    pairs = args[1:]
                    if not pairs or len(pairs) % 2:
                        return NvmlResult(fn, args, error="INVALID_ARGUMENT")
                    call_args = [call_args[0], list(zip(pairs[::2], pairs[1::2], strict=True))]
                return NvmlResult(fn, args, value=to_json(function(*call_args)))
            except Exception as exc:
                return NvmlResult(fn, args, error=error_name(exc, module))

    def _shutdown_sync(self) -> None:
        with self._lock:
            if not self._initialized or self._module is None:
                return
            with contextlib.suppress(Exception):  # shutting down: nothing left to report to
                self._module.nvmlShutdown()
            self._initialized = False
            self._tried = False
            self._handles.clear()
