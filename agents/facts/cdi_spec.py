"""The host's CDI specs for NVIDIA GPUs, as the container engines read them, and whether what they name is there.

A CDI spec (``nvidia-ctk cdi generate``: ``/etc/cdi/nvidia.yaml`` by hand, ``/var/run/cdi/nvidia.yaml`` by NVIDIA
Container Toolkit 1.18's ``nvidia-cdi-refresh``) lists the device nodes and the driver's files (libraries named with
the driver's version, binaries, GSP firmware) a container gets, as bind mounts of their host paths. NVIDIA's CDI guide:
"if you change the device or CUDA driver configuration, you must generate a new CDI specification", a driver upgrade
being such a change; a spec that names files the host no longer has stops every container started from it (Podman:
``crun: error stat'ing file /usr/lib64/libcuda.so.550.127.05: No such file or directory``). From 1.18 a path unit
watching ``/lib/modules/%v/modules.dep`` regenerates the spec when the driver changes.

The specs are read whole (bounded) and their ``hostPath``/``path`` entries taken by pattern, for the YAML and the
JSON forms alike; each entry's existence is asked of the host, at most :data:`MAX_PATHS` of them.
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, command_ref, dir_ref, file_ref

SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
NVIDIA_KIND = "nvidia.com/gpu"
REFRESH = "nvidia-cdi-refresh"
REFRESH_UNITS = ("/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system")
ENABLED = ("systemctl", "is-enabled", f"{REFRESH}.path")
MAX_PATHS = 96
MAX_SPECS = 16
"""Spec files read in each folder (a host has one to three): the rest are counted in :attr:`HostCdi.unread`."""
_HOST_PATH = r"""(?m)["']?hostPath["']?\s*:\s*["']?([^"',\s}]+)"""
_NODE = r"""(?m)["']?path["']?\s*:\s*["']?(/dev/[^"',\s}]+)"""
_KIND = r"""(?m)^\s*["']?kind["']?\s*:\s*["']?([^"',\s}]+)"""
_VERSION = r"\.so\.(\d+\.\d+(?:\.\d+)?)$|/firmware/nvidia/(\d+\.\d+(?:\.\d+)?)/"


class CdiSpecFile(Record):
    """One spec file for NVIDIA GPUs and what of it the host lacks."""

    path: str
    host_paths: tuple[str, ...]
    nodes: tuple[str, ...]
    versions: tuple[str, ...]
    """Driver versions its files are named with (one where it was generated for one driver)."""
    missing: tuple[str, ...]
    """Paths it names that the host does not have."""
    unchecked: int = 0
    """Paths past :data:`MAX_PATHS`, not asked."""

    @property
    def ref(self) -> str:
        return file_ref(self.path)


class HostCdi(Record):
    specs: tuple[CdiSpecFile, ...]
    unread: tuple[str, ...]
    """Spec folders or files that exist but could not be read (path: error)."""
    refresh_installed: bool
    refresh_enabled: bool | None
    """``systemctl is-enabled nvidia-cdi-refresh.path`` said enabled (None: not asked or no answer)."""
    refs: tuple[str, ...]


def _versions(paths: tuple[str, ...]) -> tuple[str, ...]:
    found = (m.group(1) or m.group(2) for p in paths if (m := re.search(_VERSION, p)))
    return tuple(dict.fromkeys(found))


async def _spec(probe: Probe, path: str, text: str) -> CdiSpecFile | None:
    kinds = re.findall(_KIND, text)
    if NVIDIA_KIND not in kinds:
        return None
    host_paths = tuple(dict.fromkeys(re.findall(_HOST_PATH, text)))
    nodes = tuple(dict.fromkeys(re.findall(_NODE, text)))
    asked = [*nodes, *host_paths][:MAX_PATHS]
    there = await probe.gather(*[lambda p=p: probe.exists(p) for p in asked])
    missing = tuple(p for p, ok in zip(asked, there, strict=True) if not ok)
    unchecked = len(nodes) + len(host_paths) - len(asked)
    return CdiSpecFile(path, host_paths, nodes, _versions(host_paths), missing, unchecked)


async def _files(probe: Probe) -> tuple[list[tuple[str, str]], list[str]]:
    """(path, text) of every spec file in the spec folders, and what could not be read."""
    texts: list[tuple[str, str]] = []
    unread: list[str] = []
    for folder in SPEC_DIRS:
        listing = await probe.list_dir(folder)
        if listing.entries is None:
            if listing.error not in (None, "ENOENT", "ENOTDIR"):
                unread.append(f"{folder}: {listing.error}")
            continue
        names = sorted(e for e in listing.entries if e.endswith((".yaml", ".yml", ".json")))
        if len(names) > MAX_SPECS:
            unread.append(f"{folder}: {len(names) - MAX_SPECS} more spec files, not read")
        for name in names[:MAX_SPECS]:
            result = await probe.read(f"{folder}/{name}")
            text = result.text()
            if text is None:
                unread.append(f"{folder}/{name}: {result.error}")
            else:
                texts.append((f"{folder}/{name}", text))
    return texts, unread


async def read_host_cdi(probe: Probe) -> HostCdi:
    """The NVIDIA CDI specs of this host, what they name that is gone, and the toolkit's refresh units."""
    texts, unread = await _files(probe)
    specs = [s for path, text in texts if (s := await _spec(probe, path, text)) is not None]
    units = [f"{d}/{REFRESH}.path" for d in REFRESH_UNITS]
    installed = any(await probe.gather(*[lambda u=u: probe.exists(u) for u in units]))
    enabled: bool | None = None
    if installed:
        answer = await probe.run(ENABLED)
        enabled = None if answer.error is not None else answer.stdout.strip() == "enabled"
    refs = (*(dir_ref(d) for d in SPEC_DIRS), *(s.ref for s in specs), *((command_ref(ENABLED),) if installed else ()))
    return HostCdi(tuple(specs), tuple(unread), installed, enabled, refs)
