"""Shared by the diff and share tests (no tests here): audits made once per session, scratch in RAM.

An audit of the seed takes about a second; each snapshot is audited once, with its transcript.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import anyio

from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.events.session import SessionEnded, SessionStarted
from rigaudit.transcripts.writer import TranscriptWriter
from tests.support.mutate import light_copy, set_command, set_file, set_nvml
from tests.support.ram import ram_base

FIXTURES = Path(__file__).parent.parent / "fixtures"
SEED = FIXTURES / "seed-lxc-8x-rtxpro6000"
GPU0_CONFIG = "/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0/config"
DEVCTL_HIGH = 0x78 + 8 + 1
"""High byte of GPU0's PCIe Device Control (MaxReadReq in bits 14:12)."""


def _scratch_root() -> Path:
    """/dev/shm when it has room for a session (tests.support.ram: a /dev/shm shared by several runs fills up), else
    the default temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="rigaudit-difftest-", dir=ram_base()))
    atexit.register(shutil.rmtree, folder, True)
    return folder


SCRATCH = _scratch_root()


def scratch(name: str) -> Path:
    """A fresh folder in this session's scratch (RAM when there is some)."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=SCRATCH))


def snapshot_dirs() -> list[Path]:
    """Every snapshot directory under tests/fixtures (the seed, and real hosts the lead adds)."""
    return sorted(p for p in FIXTURES.iterdir() if (p / "snapshot.json").is_file())


@functools.cache
def audited(path: Path) -> tuple[AuditResult, Path]:
    """The audit of the snapshot at ``path`` and the transcript it was recorded in."""
    host = SnapshotHost(path)
    transcript = SCRATCH / f"audit-{hashlib.sha1(str(path).encode()).hexdigest()[:10]}.jsonl"
    with TranscriptWriter(transcript) as writer:
        writer(SessionStarted(command="audit", host=host.name, source=host.source))
        result = anyio.run(lambda: run_audit(host, emit=writer))
        writer(SessionEnded(exit_code=0))
    return result, transcript


@functools.cache
def after_update() -> Path:
    """A copy of the seed as it might look after a driver update and a tuning session:
    NUMA balancing off (resolved), GPU0 MaxReadReq 4096 (observed changes), user-space driver
    580.95.06 against the 580.95.05 module (a new high problem), GPU0 power (volatile), a dmesg line."""
    root = light_copy(SEED, scratch("after") / "snap")
    set_file(root, "/proc/sys/kernel/numa_balancing", "0\n")
    config = bytearray((root / "files" / GPU0_CONFIG.lstrip("/")).read_bytes())
    config[DEVCTL_HIGH] = (config[DEVCTL_HIGH] & 0x8F) | 0x50
    set_file(root, GPU0_CONFIG, bytes(config))
    set_nvml(root, "nvmlSystemGetDriverVersion", [], "580.95.06")
    set_nvml(root, "nvmlDeviceGetPowerUsage", [0], 123456)
    dmesg = next(line for line in (SEED / "commands.jsonl").read_text().splitlines() if '"dmesg"' in line)
    record = json.loads(dmesg)
    set_command(root, ["dmesg"], record["stdout"] + "[ 4242.000001] nvidia-modeset: reloaded\n", any_args=True)
    return root
