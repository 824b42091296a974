"""Helpers for the apply / rollback tests: a small real copy of the seed, its known plan, fake hosts.

The seed's known values: kernel.numa_balancing 1 (want 0); cpuidle state2 ``disable`` 0 on all
128 CPUs (want 1); MaxReadReq 512 on the 8 GPUs (PCIe DevCtl at CAP_EXP+8 = 0x283f; want 0x5000
under mask 0x7000). Tests write only into temporary copies (on /dev/shm when there is one: the
seed is 3,700 files and this VM's disk is slow).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio

from rigaudit.tools.hosts.base import CommandResult, DirResult, FileResult, HostWriteError, NvmlResult
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.finding import CommandAction, PciRegisterAction, SysctlAction, SysfsWriteAction
from rigaudit.tools.schema.plan import Plan, PlanStep

SEED = Path(__file__).parent.parent / "fixtures" / "seed-lxc-8x-rtxpro6000"
GPUS = (
    "0000:03:00.0",
    "0000:04:00.0",
    "0000:43:00.0",
    "0000:44:00.0",
    "0000:83:00.0",
    "0000:84:00.0",
    "0000:c3:00.0",
    "0000:c4:00.0",
)
CPUIDLE = tuple(f"/sys/devices/system/cpu/cpu{n}/cpuidle/state2/disable" for n in range(128))
NUMA = "/proc/sys/kernel/numa_balancing"
DEVCTL = 0x78 + 8
"""The GPUs' PCI Express capability sits at 0x78; Device Control is 8 bytes into it."""


def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A private folder in RAM when possible (removed afterwards), else ``tmp_path``."""
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="rigaudit-test-", dir="/dev/shm"))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path


def mini_seed(target: Path) -> Path:
    """A small real copy of the seed with just what the hand-built plan touches (and the manifest)."""
    target.mkdir(parents=True)
    for name in ("snapshot.json", "links.json", "dirs.json", "unreadable.json"):
        shutil.copyfile(SEED / name, target / name)
        os.chmod(target / name, 0o644)
    seed = SnapshotHost(SEED)
    paths = [NUMA, "/proc/modules", "/etc/hostname", *CPUIDLE]
    paths += [seed.resolve(f"/sys/bus/pci/devices/{gpu}/config") for gpu in GPUS]
    for path in paths:
        dst = target / "files" / path.lstrip("/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SEED / "files" / path.lstrip("/"), dst)
    return target


def seed_plan(*, extra: Sequence[PlanStep] = ()) -> Plan:
    """The seed's runtime fixes, built by hand, plus a deferred reboot step and a hypervisor step."""
    steps = [
        PlanStep(
            id="numa.balancing",
            check="numa.balancing",
            priority="P0",
            kind="runtime",
            where="host",
            title="Disable automatic NUMA balancing",
            actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
            verify="cat /proc/sys/kernel/numa_balancing  -> 0",
            revert="sysctl -w kernel.numa_balancing=1",
        ),
        PlanStep(
            id="power.cstates",
            check="power.cstates",
            priority="P0",
            kind="runtime",
            where="host",
            title="Disable deep C-state C2",
            actions=(SysfsWriteAction(paths=CPUIDLE, value="1"),),
            verify="grep . /sys/devices/system/cpu/cpu*/cpuidle/state2/disable  -> 1",
            revert="write 0 to the same files",
        ),
        PlanStep(
            id="pcie.mrrs",
            check="pcie.mrrs",
            priority="P0",
            kind="runtime",
            where="host",
            title="Raise MaxReadReq to 4096 bytes",
            risk="medium",
            actions=(PciRegisterAction(devices=GPUS, capability="exp", offset=8, width=2, value=0x5000, mask=0x7000),),
            verify="setpci -s BDF CAP_EXP+8.w  -> 5xxx",
            revert="setpci -s BDF CAP_EXP+8.w=2000:7000",
        ),
        PlanStep(
            id="power.scaling_driver",
            check="power.scaling_driver",
            priority="P1",
            kind="reboot",
            where="host",
            title="Use amd_pstate",
            actions=(CommandAction(argv=("proxmox-boot-tool", "refresh"), description="add amd_pstate=active to the boot line"),),
            verify="cat /sys/devices/system/cpu/amd_pstate/status  -> active",
            revert="remove amd_pstate=active; reboot",
        ),
        PlanStep(
            id="pcie.acs",
            check="pcie.acs",
            priority="P0",
            kind="runtime",
            where="hypervisor",
            title="Clear ACS redirect on the switch ports",
            actions=(
                PciRegisterAction(devices=("0000:02:00.0",), capability="ecap:0x000d", offset=6, width=2, value=0, mask=0x1C),
            ),
            verify="setpci -s 0000:02:00.0 ECAP_ACS+6.w  -> bits 2-4 clear",
            revert="setpci -s 0000:02:00.0 ECAP_ACS+6.w=001c:001c",
        ),
        *extra,
    ]
    return Plan(steps=tuple(steps))


def read(root: Path, path: str) -> bytes:
    return anyio.run(SnapshotHost(root).read, path).data or b""


def devctl(root: Path, gpu: str) -> int:
    config = read(root, f"/sys/bus/pci/devices/{gpu}/config")
    return int.from_bytes(config[DEVCTL : DEVCTL + 2], "little")


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256): equal digests mean byte for byte equal trees."""
    digests: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs:
            rel = os.path.relpath(os.path.join(folder, name), root)
            digests.setdefault(rel + "/", "dir")
        for name in names:
            full = os.path.join(folder, name)
            digests[os.path.relpath(full, root)] = hashlib.sha256(Path(full).read_bytes()).hexdigest()
    return digests


@functools.cache
def seed_digest() -> dict[str, str]:
    """:func:`tree_digest` of the read-only seed, computed once per test run."""
    return tree_digest(SEED)


class MemoryHost:
    """An in-memory host for the cases a snapshot cannot show: writes that do not take, refused
    writes, commands (modprobe, systemctl) that change state."""

    def __init__(self, files: dict[str, bytes], *, mangle: dict[str, bytes] | None = None, refuse: Sequence[str] = ()) -> None:
        self.files = dict(files)
        self.mangle = dict(mangle or {})
        """The first write to each of these paths stores this value instead (a kernel that clamps it)."""
        self.refuse = set(refuse)
        self.commands: list[tuple[str, ...]] = []
        self.writes: list[str] = []
        self.modules: set[str] = set()
        self.active: set[str] = set()

    @property
    def name(self) -> str:
        return "memory"

    @property
    def source(self) -> str:
        return "memory"

    async def read(self, path: str) -> FileResult:
        if path == "/proc/modules":
            return FileResult(path, "".join(f"{m} 16384 0 - Live 0x0\n" for m in sorted(self.modules)).encode())
        if path in self.files:
            return FileResult(path, self.files[path])
        return FileResult(path, None, "ENOENT")

    async def list_dir(self, path: str) -> DirResult:
        return DirResult(path, None, "ENOENT")

    async def readlink(self, path: str) -> str | None:
        return None

    async def exists(self, path: str) -> bool:
        return path in self.files

    async def run(self, argv: Sequence[str], *, timeout_s: float = 10.0) -> CommandResult:
        key = tuple(argv)
        self.commands.append(key)
        if key[:1] == ("modprobe",):
            if key[1] == "-r":
                self.modules.discard(key[2].replace("-", "_"))
            else:
                self.modules.add(key[1].replace("-", "_"))  # /proc/modules spells it with underscores
            return CommandResult(key, exit_code=0)
        if key[:2] == ("systemctl", "is-active"):
            state = "active" if key[2] in self.active else "inactive"
            return CommandResult(key, exit_code=0 if state == "active" else 3, stdout=state + "\n")
        if key[:2] in (("systemctl", "start"), ("systemctl", "stop")):
            (self.active.add if key[1] == "start" else self.active.discard)(key[2])
            return CommandResult(key, exit_code=0)
        if key[:1] == ("install",):
            self.files[key[-1]] = b""
            return CommandResult(key, exit_code=0)
        if key[:3] == ("rm", "-f", "--"):
            self.files.pop(key[3], None)
            return CommandResult(key, exit_code=0)
        return CommandResult(key, error="not_found")

    async def nvml(self, fn: str, *args: int) -> NvmlResult:
        return NvmlResult(fn, tuple(args), error="LIBRARY_NOT_FOUND")

    async def write(self, path: str, data: bytes, *, offset: int | None = None) -> None:
        self.writes.append(path)
        if path in self.refuse:
            raise HostWriteError(f"{path}: EPERM (Operation not permitted)")
        if path not in self.files:
            raise HostWriteError(f"{path}: ENOENT")
        if path in self.mangle:
            data = self.mangle.pop(path)
        if offset is None:
            self.files[path] = data
        else:
            old = self.files[path]
            self.files[path] = old[:offset] + data + old[offset + len(data) :]

    async def aclose(self) -> None:
        return None
