"""The local NVML facade: pynvml calls by C name, JSON results as the snapshot format records them."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import threading
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import anyio
import pytest

from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.nvml_local import NvmlFacade, device_arg_positions, is_read_only, root_owned, to_json

ERRORS = {
    "INVALID_ARGUMENT": 2,
    "NOT_SUPPORTED": 3,
    "NO_PERMISSION": 4,
    "DRIVER_NOT_LOADED": 9,
    "LIBRARY_NOT_FOUND": 12,
    "FUNCTION_NOT_FOUND": 13,
    "GPU_IS_LOST": 15,
    "UNKNOWN": 999,
}


class PciInfo(ctypes.Structure):
    """A plain ctypes struct (bytes fields undecoded), shaped like pynvml's nvmlPciInfo_t."""

    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    ]


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class Bar1(ctypes.Structure):
    _fields_ = [("bar1Total", ctypes.c_ulonglong), ("bar1Free", ctypes.c_ulonglong), ("bar1Used", ctypes.c_ulonglong)]


class FakeHandle:
    def __init__(self, index: int) -> None:
        self.index = index


def fake_pynvml(*, init_error: str | None = None, count: int = 2) -> Any:
    """A stand-in pynvml module recording what it was called with."""
    module: Any = ModuleType("pynvml")
    for name, code in ERRORS.items():
        setattr(module, f"NVML_ERROR_{name}", code)

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(value)
            self.value = value

    module.NVMLError = NVMLError
    module.calls = []
    module.release = threading.Event()

    def handle(i: int) -> FakeHandle:
        module.calls.append(("handle", i))
        if i >= count:
            raise NVMLError(ERRORS["INVALID_ARGUMENT"])
        return FakeHandle(i)

    def init() -> None:
        module.calls.append(("init",))
        if init_error:
            raise NVMLError(ERRORS[init_error])

    def pci(h: FakeHandle) -> PciInfo:
        bdf = f"{3 + h.index:02x}"
        return PciInfo(f"0000:{bdf}:00.0".encode(), 0, 3 + h.index, 0, 733286622, 541987038, f"00000000:{bdf}:00.0".encode())

    def not_supported(h: FakeHandle) -> None:
        raise NVMLError(ERRORS["NOT_SUPPORTED"])

    def setter(h: FakeHandle, value: int) -> None:
        module.calls.append(("set", value))

    def p2p(a: FakeHandle, b: FakeHandle, cap: int) -> int:
        module.calls.append(("p2p", a.index, b.index, cap))
        return 0 if isinstance(a, FakeHandle) and isinstance(b, FakeHandle) else 99

    def blocking(h: FakeHandle) -> int:
        module.release.wait(5)
        return 1

    module.nvmlInit = init
    module.nvmlInitWithFlags = lambda flags: init()
    module.nvmlShutdown = lambda: module.calls.append(("shutdown",))
    module.nvmlDeviceGetHandleByIndex = handle
    module.nvmlDeviceGetCount = lambda: count
    module.nvmlSystemGetDriverVersion = lambda: "580.95.05"
    module.nvmlDeviceGetName = lambda h: b"NVIDIA RTX PRO 6000 Blackwell Server Edition"
    module.nvmlDeviceGetPciInfo = pci
    module.nvmlDeviceGetMemoryInfo = lambda h: Memory(102641958912, 101965627392, 676331520)
    module.nvmlDeviceGetBAR1MemoryInfo = lambda h: Bar1(137438953472, 137436856320, 2097152)
    module.nvmlDeviceGetEccMode = lambda h: (1, 1)
    module.nvmlDeviceGetMigMode = lambda h: [0, 0]
    module.nvmlDeviceGetRemappedRows = lambda h: (0, 0, 0, 0)
    module.nvmlDeviceGetCudaComputeCapability = lambda h: (12, 0)
    module.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        SimpleNamespace(pid=4242, usedGpuMemory=1 << 30, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
    ]
    module.nvmlDeviceGetTemperature = lambda h, sensor: 38 + h.index + sensor
    module.nvmlDeviceGetFanSpeed = not_supported
    module.nvmlDeviceGetP2PStatus = p2p
    module.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: 10 + a.index + b.index
    module.nvmlDeviceSetPowerManagementLimit = setter
    module.nvmlDeviceGetPowerUsage = blocking
    return module


def _call(facade: NvmlFacade, fn: str, *args: int) -> Any:
    return anyio.run(lambda: facade.call(fn, *args))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def _seed_record(seed_dir: Path, fn: str, args: list[int]) -> dict[str, Any]:
    for line in (seed_dir / "nvml.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["fn"] == fn and record["args"] == args:
            return record  # type: ignore[no-any-return]
    raise AssertionError(f"{fn}{args} not in the seed")


def test_structs_become_dicts_shaped_like_the_seed(fake: Any, seed_dir: Path) -> None:
    facade = NvmlFacade()
    pci = _call(facade, "nvmlDeviceGetPciInfo", 0)
    assert pci.value == _seed_record(seed_dir, "nvmlDeviceGetPciInfo", [0])["result"]
    memory = _call(facade, "nvmlDeviceGetMemoryInfo", 0).value
    assert memory == _seed_record(seed_dir, "nvmlDeviceGetMemoryInfo", [0])["result"]
    bar1 = _call(facade, "nvmlDeviceGetBAR1MemoryInfo", 1).value
    assert list(bar1) == list(_seed_record(seed_dir, "nvmlDeviceGetBAR1MemoryInfo", [0])["result"])
    assert json.loads(json.dumps(pci.value)) == pci.value


def test_tuples_bytes_and_process_lists(fake: Any) -> None:
    facade = NvmlFacade()
    assert _call(facade, "nvmlDeviceGetEccMode", 0).value == [1, 1]
    assert _call(facade, "nvmlDeviceGetMigMode", 0).value == [0, 0]
    assert _call(facade, "nvmlDeviceGetRemappedRows", 0).value == [0, 0, 0, 0]
    assert _call(facade, "nvmlDeviceGetCudaComputeCapability", 0).value == [12, 0]
    assert _call(facade, "nvmlDeviceGetName", 0).value == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert _call(facade, "nvmlDeviceGetComputeRunningProcesses", 0).value == [{"pid": 4242, "usedGpuMemory": 1 << 30}]
    assert _call(facade, "nvmlSystemGetDriverVersion").value == "580.95.05"


def test_real_pynvml_structs_convert() -> None:
    real = importlib.import_module("pynvml")
    info = real.nvmlPciInfo_t()
    info.busIdLegacy = b"0000:41:00.0"
    info.busId = b"00000000:41:00.0"
    info.bus = 0x41
    assert to_json(info) == {
        "busIdLegacy": "0000:41:00.0",
        "domain": 0,
        "bus": 0x41,
        "device": 0,
        "pciDeviceId": 0,
        "pciSubSystemId": 0,
        "busId": "00000000:41:00.0",
    }
    proc = real.c_nvmlProcessInfo_t()
    proc.pid, proc.usedGpuMemory = 7, 123
    # The MIG instance a process runs on is kept: it tells MIG slices in use from idle ones.
    assert to_json([proc]) == [{"pid": 7, "usedGpuMemory": 123, "gpuInstanceId": 0, "computeInstanceId": 0}]
    assert to_json(ctypes.c_uint(5)) == 5
    assert to_json(float("nan")) is None


def test_indices_become_handles(fake: Any) -> None:
    facade = NvmlFacade()
    assert _call(facade, "nvmlDeviceGetP2PStatus", 0, 1, 0).value == 0
    assert ("p2p", 0, 1, 0) in fake.calls
    assert _call(facade, "nvmlDeviceGetTopologyCommonAncestor", 1, 0).value == 11
    assert _call(facade, "nvmlDeviceGetTemperature", 1, 0).value == 39  # only argument 0 is a device
    assert _call(facade, "nvmlDeviceGetHandleByIndex", 1).value == 1  # a handle is written as its index
    assert fake.calls.count(("handle", 0)) == 1 and fake.calls.count(("handle", 1)) == 1  # handles are cached
    assert _call(facade, "nvmlDeviceGetCount").value == 2


def test_device_argument_positions() -> None:
    assert device_arg_positions("nvmlDeviceGetP2PStatus", 3) == (0, 1)
    assert device_arg_positions("nvmlDeviceGetTotalEccErrors", 3) == (0,)
    assert device_arg_positions("nvmlDeviceGetHandleByIndex", 1) == ()
    assert device_arg_positions("nvmlSystemGetTopologyGpuSet", 1) == ()


def test_errors_are_nvml_names(fake: Any) -> None:
    facade = NvmlFacade()
    assert _call(facade, "nvmlDeviceGetFanSpeed", 0).error == "NOT_SUPPORTED"
    assert _call(facade, "nvmlDeviceGetMemoryInfo", 7).error == "INVALID_ARGUMENT"  # no such device
    assert _call(facade, "nvmlDeviceGetNoSuchThing", 0).error == "FUNCTION_NOT_FOUND"
    assert _call(facade, "__import__").error == "FUNCTION_NOT_FOUND"
    assert _call(facade, "nvmlDeviceGetMemoryInfo").error == "INVALID_ARGUMENT"  # missing argument


def test_setters_never_reach_the_library(fake: Any) -> None:
    facade = NvmlFacade()
    assert _call(facade, "nvmlDeviceSetPowerManagementLimit", 0, 300000).error == "NO_PERMISSION"
    assert not [c for c in fake.calls if c[0] == "set"]
    assert is_read_only("nvmlDeviceGetPowerUsage") and not is_read_only("nvmlDeviceResetGpuLockedClocks")


def test_init_once_and_shutdown_on_close(fake: Any) -> None:
    facade = NvmlFacade()

    async def main() -> None:
        assert (await facade.call("nvmlInit")).ok
        await facade.call("nvmlDeviceGetCount")
        await facade.call("nvmlInit")
        await facade.aclose()

    anyio.run(main)
    assert fake.calls.count(("init",)) == 1
    assert fake.calls[-1] == ("shutdown",)


def test_failed_init_fails_every_call_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    module = fake_pynvml(init_error="DRIVER_NOT_LOADED")
    monkeypatch.setitem(sys.modules, "pynvml", module)
    facade = NvmlFacade()
    assert _call(facade, "nvmlDeviceGetCount").error == "DRIVER_NOT_LOADED"
    assert _call(facade, "nvmlInit").error == "DRIVER_NOT_LOADED"
    assert _call(facade, "nvmlDeviceGetName", 0).error == "DRIVER_NOT_LOADED"
    assert module.calls.count(("init",)) == 1
    anyio.run(facade.aclose)
    assert ("shutdown",) not in module.calls


def test_no_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    facade = NvmlFacade()
    assert _call(facade, "nvmlInit").error == "LIBRARY_NOT_FOUND"
    assert _call(facade, "nvmlDeviceGetCount").error == "LIBRARY_NOT_FOUND"


def test_a_hung_call_times_out(fake: Any) -> None:
    facade = NvmlFacade(call_timeout_s=0.05)
    try:
        assert _call(facade, "nvmlDeviceGetPowerUsage", 0).error == "TIMEOUT"
    finally:
        fake.release.set()


def test_this_machine_without_a_gpu_reports_an_error() -> None:
    host = LocalHost()

    async def main() -> tuple[str | None, str | None]:
        try:
            return (await host.nvml("nvmlInit")).error, (await host.nvml("nvmlDeviceGetCount")).error
        finally:
            await host.aclose()

    init_error, count_error = anyio.run(main)
    assert init_error in {"LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED"}
    assert count_error == init_error


def _library_found_once_loaded(tmp_path: Path) -> tuple[Any, Path, list[str]]:
    """A pynvml that finds no libnvidia-ml until one is loaded; the GPU Operator's copy, where the facade may look."""
    module = fake_pynvml(init_error="LIBRARY_NOT_FOUND")
    library = tmp_path / "run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\x7fELF")
    loaded: list[str] = []

    def init() -> None:
        module.calls.append(("init",))
        if not loaded:
            raise module.NVMLError(ERRORS["LIBRARY_NOT_FOUND"])

    module.nvmlInit = init
    return module, library, loaded


def test_the_gpu_operator_s_library_is_loaded_where_the_host_has_none(tmp_path: Path) -> None:
    module, library, loaded = _library_found_once_loaded(tmp_path)
    facade = NvmlFacade(module=module, libraries=(str(library),), loader=lambda p: loaded.append(p) or True, trusted=lambda p: p)
    result = anyio.run(facade.call, "nvmlDeviceGetCount")
    assert (result.error, result.value) == (None, 2)
    assert loaded == [str(library)]


def test_a_library_someone_else_can_write_is_never_loaded(tmp_path: Path) -> None:
    module, library, loaded = _library_found_once_loaded(tmp_path)
    library.chmod(0o666)
    facade = NvmlFacade(module=module, libraries=(str(library),), loader=lambda p: loaded.append(p) or True)
    assert anyio.run(facade.call, "nvmlDeviceGetCount").error == "LIBRARY_NOT_FOUND"
    assert loaded == []
    assert not root_owned(str(library))


root_only = pytest.mark.skipif(os.geteuid() != 0, reason="ownership is judged as root runs the gate")
NOBODY = 65534


@root_only
def test_the_operator_s_library_is_loaded_by_its_real_path(tmp_path: Path) -> None:
    module, library, loaded = _library_found_once_loaded(tmp_path)
    real = library.with_name("libnvidia-ml.so.580.95.05")
    library.rename(real)
    library.symlink_to(real.name)
    facade = NvmlFacade(module=module, libraries=(str(library),), loader=lambda p: loaded.append(p) or True)
    assert anyio.run(facade.call, "nvmlDeviceGetCount").error is None
    assert loaded == [str(real)]


@root_only
def test_a_link_in_a_folder_another_user_owns_is_never_trusted(tmp_path: Path) -> None:
    """Its owner could switch the link to a library of theirs between the check and the load."""
    folder = tmp_path / "run/nvidia/driver/usr/lib64"
    folder.mkdir(parents=True)
    os.chown(folder, NOBODY, NOBODY)
    (folder / "libnvidia-ml.so.1").symlink_to(sys.executable)
    assert root_owned(sys.executable) == os.path.realpath(sys.executable)
    assert root_owned(str(folder / "libnvidia-ml.so.1")) is None


@root_only
def test_a_library_below_a_folder_another_user_owns_is_never_trusted(tmp_path: Path) -> None:
    module, library, loaded = _library_found_once_loaded(tmp_path)
    os.chown(library.parent.parent, NOBODY, NOBODY)  # its owner could put another folder in the library's place
    facade = NvmlFacade(module=module, libraries=(str(library),), loader=lambda p: loaded.append(p) or True)
    assert anyio.run(facade.call, "nvmlDeviceGetCount").error == "LIBRARY_NOT_FOUND"
    assert loaded == []


@root_only
def test_a_fifo_named_as_the_library_is_never_loaded(tmp_path: Path) -> None:
    fifo = tmp_path / "libnvidia-ml.so.1"
    os.mkfifo(fifo, 0o644)
    assert root_owned(str(fifo)) is None
