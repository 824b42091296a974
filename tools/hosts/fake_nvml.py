"""A stand-in ``pynvml`` whose GPUs are busy exactly when a test (or a fake server) says, for tests and benchmarks.

A :class:`FakeGpu` records when its "kernels" run (``with gpu.kernel(): ...``, from any thread; the
union of overlapping kernels counts once) and answers NVML from that: ``utilization.gpu`` is the
busy share of the last ``period_s`` (as NVML averages over its sample period), ``utilization.memory``
that share times ``memory_share``; power rises from ``idle_w`` to ``busy_w`` with it; PCIe
throughput and the NVLink byte counters grow with busy time at the rates given. Clocks, memory and
the power limit are fixed fields. :func:`fake_pynvml` is the module: hand it to
``NvmlFacade(module=...)`` and that to ``LocalHost(nvml=...)``, and the profile samples these GPUs
through the same facade it uses on a real host (``rigaudit.tools.bench.profile_fake.busy_generator``
plugs one into the fake inference server).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

from rigaudit.tools.core.record import Record, field

__all__ = ["FakeGpu", "fake_pynvml"]

ERRORS = {"INVALID_ARGUMENT": 2, "NOT_SUPPORTED": 3, "NO_PERMISSION": 4, "DRIVER_NOT_LOADED": 9, "LIBRARY_NOT_FOUND": 12}
NVLINK_TX, NVLINK_RX = 138, 139
_KEEP_S = 30.0


class FakeGpu(Record, frozen=False):
    name: str = "NVIDIA H200"
    period_s: float = 0.1
    """NVML's averaging window for utilisation (1/6 s to 1 s on real GPUs)."""
    memory_share: float = 0.5
    """Of the busy time, the share with memory traffic (NVML's ``utilization.memory``)."""
    sm_mhz: int = 1980
    max_sm_mhz: int = 1980
    mem_mhz: int = 3201
    max_mem_mhz: int = 3201
    idle_w: float = 75.0
    busy_w: float = 450.0
    limit_w: float = 700.0
    memory_total: int = 150 * 2**30
    memory_used: int = 20 * 2**30
    pcie_kbs: int = 2000
    """PCIe throughput while busy, KB/s, each way; 0 with ``pcie_supported`` False: NOT_SUPPORTED."""
    pcie_supported: bool = True
    nvlink_gbs: float = 0.0
    """NVLink data rate while busy, GB/s each way; 0: the GPU has no NVLink (NOT_SUPPORTED)."""
    pids: list[int] = field(default_factory=list)
    clock: Any = time.perf_counter

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0
        self._intervals: list[tuple[float, float]] = []
        self._closed_total = 0.0

    @contextlib.contextmanager
    def kernel(self) -> Iterator[None]:
        """Busy from entering to leaving (nested or concurrent kernels count once)."""
        with self._lock:
            if self._active == 0:
                self._since = self.clock()
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    end = self.clock()
                    self._intervals.append((self._since, end))
                    self._closed_total += end - self._since
                    self._intervals = [iv for iv in self._intervals if iv[1] >= end - _KEEP_S]

    def busy_s(self, start: float, end: float) -> float:
        """Busy seconds within [start, end]."""
        with self._lock:
            spans = list(self._intervals)
            if self._active:
                spans.append((self._since, self.clock()))
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)

    def total_busy_s(self) -> float:
        with self._lock:
            return self._closed_total + (self.clock() - self._since if self._active else 0.0)

    def busy_fraction(self) -> float:
        now = self.clock()
        return min(1.0, self.busy_s(now - self.period_s, now) / self.period_s)


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Value(ctypes.Union):
    _fields_ = [
        ("dVal", ctypes.c_double),
        ("uiVal", ctypes.c_uint),
        ("ulVal", ctypes.c_ulong),
        ("ullVal", ctypes.c_ulonglong),
        ("sllVal", ctypes.c_longlong),
    ]


class _FieldValue(ctypes.Structure):
    """Shaped like pynvml's ``c_nvmlFieldValue_t``."""

    _fields_ = [
        ("fieldId", ctypes.c_uint32),
        ("scopeId", ctypes.c_uint32),
        ("timestamp", ctypes.c_int64),
        ("latencyUsec", ctypes.c_int64),
        ("valueType", ctypes.c_uint),
        ("nvmlReturn", ctypes.c_uint),
        ("value", _Value),
    ]


class _Devices:
    """NVML's per-device calls, answered from the fake GPUs (a handle is a namespace holding the index); a failure
    raises the module's ``NVMLError`` with its code."""

    def __init__(self, gpus: list[FakeGpu], error: Callable[[int], Exception]) -> None:
        self.gpus = gpus
        self.error = error

    def gpu(self, handle: SimpleNamespace) -> FakeGpu:
        return self.gpus[int(handle.index)]

    def handle(self, index: int) -> SimpleNamespace:
        if not 0 <= index < len(self.gpus):
            raise self.error(ERRORS["INVALID_ARGUMENT"])
        return SimpleNamespace(index=index)

    def utilization(self, h: SimpleNamespace) -> _Utilization:
        g = self.gpu(h)
        busy = g.busy_fraction()
        return _Utilization(round(100 * busy), round(100 * busy * g.memory_share))

    def clock(self, h: SimpleNamespace, kind: int) -> int:
        g = self.gpu(h)
        return {1: g.sm_mhz, 2: g.mem_mhz}.get(kind, g.sm_mhz)

    def max_clock(self, h: SimpleNamespace, kind: int) -> int:
        g = self.gpu(h)
        return {1: g.max_sm_mhz, 2: g.max_mem_mhz}.get(kind, g.max_sm_mhz)

    def power(self, h: SimpleNamespace) -> int:
        g = self.gpu(h)
        return round(1000 * (g.idle_w + (g.busy_w - g.idle_w) * g.busy_fraction()))

    def power_limit(self, h: SimpleNamespace) -> int:
        return round(self.gpu(h).limit_w * 1000)

    def pcie(self, h: SimpleNamespace, counter: int) -> int:
        g = self.gpu(h)
        if not g.pcie_supported:
            raise self.error(ERRORS["NOT_SUPPORTED"])
        return round(g.pcie_kbs * g.busy_fraction())

    def memory(self, h: SimpleNamespace) -> _Memory:
        g = self.gpu(h)
        return _Memory(g.memory_total, g.memory_total - g.memory_used, g.memory_used)

    def fields(self, h: SimpleNamespace, ids: list[Any]) -> Any:
        g = self.gpu(h)
        values = (_FieldValue * len(ids))()
        for value, wanted in zip(values, ids, strict=True):
            field_id, scope = wanted if isinstance(wanted, tuple) else (wanted, 0)
            value.fieldId, value.scopeId, value.valueType = field_id, scope, 3
            if field_id in (NVLINK_TX, NVLINK_RX) and g.nvlink_gbs > 0:
                value.value.ullVal = round(g.total_busy_s() * g.nvlink_gbs * 1e9 / 1024)  # KiB, as NVML counts
            else:
                value.nvmlReturn = ERRORS["NOT_SUPPORTED"]
        return values

    def processes(self, h: SimpleNamespace) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=2**30) for p in self.gpu(h).pids]


def fake_pynvml(gpus: list[FakeGpu], *, init_error: str | None = None) -> Any:
    """A ``pynvml`` module answering the read-only calls the profile makes, from these GPUs."""
    module: Any = ModuleType("pynvml")
    for name, code in ERRORS.items():
        setattr(module, f"NVML_ERROR_{name}", code)

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(value)
            self.value = value

    module.NVMLError = NVMLError

    def init(*_: object) -> None:
        if init_error:
            raise NVMLError(ERRORS[init_error])

    devices = _Devices(gpus, NVMLError)
    module.nvmlInit = init
    module.nvmlInitWithFlags = init
    module.nvmlShutdown = lambda: None
    module.nvmlDeviceGetCount = lambda: len(gpus)
    module.nvmlDeviceGetHandleByIndex = devices.handle
    module.nvmlDeviceGetName = lambda h: devices.gpu(h).name
    module.nvmlDeviceGetUtilizationRates = devices.utilization
    module.nvmlDeviceGetClockInfo = devices.clock
    module.nvmlDeviceGetMaxClockInfo = devices.max_clock
    module.nvmlDeviceGetPowerUsage = devices.power
    module.nvmlDeviceGetEnforcedPowerLimit = devices.power_limit
    module.nvmlDeviceGetMemoryInfo = devices.memory
    module.nvmlDeviceGetPcieThroughput = devices.pcie
    module.nvmlDeviceGetFieldValues = devices.fields
    module.nvmlDeviceGetComputeRunningProcesses = devices.processes
    return module
