"""nccl.version: the NCCL library the server loads against the one its torch build pins."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.nvidia_driver import version_key
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.processes import ServerScan
from rigaudit.agents.facts.python_env import TorchInstall, dist_version, find_torch, required_version
from rigaudit.agents.investigators.nccl import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

_NCCL_PROJECTS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
_MAPS_NCCL = r"(?m)\s(/\S*/libnccl\.so(?:\.[0-9.]+)?)\s*$"
_FILE_VERSION = r"libnccl\.so\.(\d+\.\d+\.\d+)$"


class NcclInstall(Record):
    torch: TorchInstall
    torch_dist: str | None
    """The torch-*.dist-info folder."""
    pin: str | None
    """The NCCL version torch's METADATA requires (``nvidia-nccl-cu12==2.27.3``)."""
    wheel: str | None
    """The nvidia-nccl wheel installed next to it."""
    loaded: str | None
    """The libnccl path the server maps."""
    refs: tuple[str, ...]

    def loaded_version(self) -> str | None:
        if self.loaded is None:
            return None
        if match := re.search(_FILE_VERSION, self.loaded):
            return match.group(1)
        if self.loaded.startswith(f"{self.torch.site}/nvidia/nccl/lib/"):
            return self.wheel
        return None


class NcclVersionFacts(Record):
    platform: Platform
    installs: tuple[NcclInstall, ...]
    searched: tuple[str, ...]
    scan: ServerScan


async def _install(probe: Probe, torch: TorchInstall) -> NcclInstall:
    listing = await probe.list_dir(torch.site_path)
    refs = [dir_ref(torch.site_path)]
    entries = listing.entries or ()
    torch_dist = next((e for e in entries if e.startswith("torch-") and e.endswith(".dist-info")), None)
    pin = None
    if torch_dist:
        path = f"{torch.site_path}/{torch_dist}/METADATA"
        metadata = await probe.text(path)
        refs.append(file_ref(path))
        pin = next((v for p in _NCCL_PROJECTS if (v := required_version(metadata, p))), None)
    wheel = next((found[1] for p in _NCCL_PROJECTS if (found := dist_version(entries, p.replace("-", "_")))), None)
    loaded = None
    if torch.server is not None:
        maps_path = f"/proc/{torch.server.pid}/maps"
        maps = await probe.text(maps_path)
        if match := re.search(_MAPS_NCCL, maps or ""):
            loaded = match.group(1)
            refs.append(file_ref(maps_path))
    return NcclInstall(torch, torch_dist, pin, wheel, loaded, tuple(refs))


async def collect_nccl_version(probe: Probe, platform: Platform, scan: ServerScan) -> NcclVersionFacts:
    search = await find_torch(probe)
    installs = await probe.gather(*[lambda t=t: _install(probe, t) for t in search.installs])
    return NcclVersionFacts(platform, tuple(installs), search.searched, scan)


def _in_container(install: NcclInstall) -> bool:
    server = install.torch.server
    return server is not None and (bool(server.container) or bool(server.foreign_mnt_ns))


NCCL_VERSION_CHECK = Check(
    "nccl.version",
    "NCCL library vs the torch build",
    reads=(
        "torch's wheel METADATA (`Requires-Dist: nvidia-nccl-cuXX==`), the nvidia-nccl wheel's dist-info, the libnccl "
        "the server maps (`/proc/PID/maps`)"
    ),
    problem="the NCCL loaded or installed differs from the one torch pins (medium when older or missing)",
    fix="install the pinned nvidia-nccl wheel; drop LD_LIBRARY_PATH overrides",
    kinds=("restart",),
    premises=(premises.PLATFORM_FIX, premises.SERVERS, premises.PACKAGES),
    layer="workload",
)


def _unpinned(judged: list[NcclInstall], refs: tuple[str, ...]) -> Finding:
    """No torch here pins an NCCL wheel: nothing to compare the loaded NCCL with."""
    why = "; ".join(
        f"torch {i.torch.version or '?'} at {i.torch.site}: "
        + (
            "no torch-*.dist-info"
            if i.torch_dist is None
            else "its METADATA pins no nvidia-nccl wheel (source, conda or NGC build)"
        )
        + (f", loads {i.loaded}" if i.loaded else "")
        for i in judged
    )
    return NCCL_VERSION_CHECK.unknown(why, evidence=refs)


Drift = tuple[NcclInstall, str, str, str]
"""(install, ``loaded``/``installed``/``missing``, the NCCL version found, where) of an NCCL torch does not pin."""


def _drifts(pinned: list[NcclInstall]) -> list[Drift]:
    rows: list[Drift] = []
    for i in pinned:
        loaded = i.loaded_version()
        if loaded is not None and loaded != i.pin:
            rows.append((i, "loaded", loaded, i.loaded or ""))
        elif i.wheel is not None and i.wheel != i.pin and (i.loaded is None or loaded == i.wheel):
            rows.append((i, "installed", i.wheel, f"{i.torch.site}/nvidia/nccl"))
        elif i.wheel is None and i.loaded is None:
            rows.append((i, "missing", "none", f"{i.torch.site}/nvidia/nccl"))
    return rows


def _drift_severity(rows: list[Drift]) -> Severity:
    """Medium where a server runs an older (or no) NCCL than torch pins; low for a newer one or no server."""
    older = any(kind == "missing" or version_key(found) < version_key(i.pin or "") for i, kind, found, _ in rows)
    if not older or not any(i.torch.server for i, _, _, _ in rows):
        return "low"
    return "medium"


def _pinned_nccl_fix(f: NcclVersionFacts, target: NcclInstall) -> Fix:
    return Fix(
        kind="restart",
        where="container" if f.platform.in_container or _in_container(target) else "host",
        summary=f"Use the NCCL torch was built against ({target.pin}) and restart the server",
        actions=(
            CommandAction(
                description=f"in the environment of {target.torch.site}: pip install 'nvidia-nccl-cu12=={target.pin}' "
                "(the cuXX suffix of torch's own requirement)"
            ),
            CommandAction(
                description="remove LD_LIBRARY_PATH / LD_PRELOAD entries that put another libnccl.so.2 ahead of the "
                "wheel's, then restart the inference server"
            ),
        ),
        risk="medium",
        verify="grep libnccl /proc/PID/maps of the restarted server shows the wheel's library; NCCL_DEBUG=INFO prints "
        f"'NCCL version {target.pin}'",
        revert="pip install the previous nvidia-nccl version",
        persist="pin the version in the environment's requirements",
    )


def judge_nccl_version(f: NcclVersionFacts) -> Finding:
    if not f.installs:
        return NCCL_VERSION_CHECK.unknown(
            f"no serving Python with torch found ({f.scan.searched}; {len(f.searched)} site-packages folders)"
        )
    judged = [i for i in f.installs if i.torch.server is not None] or list(f.installs)
    refs = tuple(r for i in judged for r in i.refs)
    pinned = [i for i in judged if i.pin is not None]
    if not pinned:
        return _unpinned(judged, refs)
    rows = _drifts(pinned)
    described = "; ".join(
        f"torch {i.torch.version or '?'} pins NCCL {i.pin}, wheel {i.wheel or 'absent'}"
        + (f", server loads {i.loaded}" if i.loaded else "")
        for i in pinned
    )
    if not rows:
        return NCCL_VERSION_CHECK.ok(described, expected="the NCCL version torch was built against", evidence=refs)
    return NCCL_VERSION_CHECK.problem_at(
        _drift_severity(rows),
        "; ".join(
            f"torch {i.torch.version or '?'} pins NCCL {i.pin}; {kind} {found} ({where})" for i, kind, found, where in rows
        ),
        "the NCCL version torch was built against",
        "torch wheels are built and tested against one NCCL release (the nvidia-nccl wheel their metadata pins). An "
        "older NCCL, picked up through LD_LIBRARY_PATH, a system package or a pip downgrade, lacks symbols and "
        "algorithms the build expects: initialization fails ('undefined symbol: nccl...') or collectives fall back "
        "to slower paths, and fixes for hangs are missing. A newer NCCL usually works but is untested with this build.",
        _pinned_nccl_fix(f, rows[0][0]),
        subjects=tuple(i.torch.site for i, _, _, _ in rows),
        evidence=refs,
    )
