"""The serving Python's packages: torch (its ``version.py`` and wheel metadata) and the NVIDIA wheels next to it.

No interpreter is ever run (the policy denies interpreters given code): files are read, found through the server
process (its memory maps, its interpreter path, ``/proc/PID/root`` for another mount namespace) or, when no server
is visible, well-known site-packages folders.
"""

from __future__ import annotations

import posixpath
import re

from rigaudit.agents.facts.processes import ServerProcess, find_servers
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

GENERIC_PREFIXES = ("/usr", "/usr/local")
_OPT_LIMIT = 16
_MAPS_TORCH = r"\s(/\S+?)/torch/(?:lib/libtorch|_C)"


class TorchInstall(Record):
    site: str
    """The site-packages folder as the process sees it."""
    version_file: str
    """The path read (through /proc/PID/root for a process in another mount namespace)."""
    version: str | None
    cuda: str | None
    server: ServerProcess | None

    @property
    def root(self) -> str:
        return self.server.root if self.server is not None else ""

    @property
    def site_path(self) -> str:
        """The site-packages folder as the audit reads it."""
        return f"{self.root}{self.site}"


class TorchSearch(Record):
    installs: tuple[TorchInstall, ...]
    searched: tuple[str, ...]


def parse_torch_version(text: str) -> tuple[str | None, str | None]:
    """``__version__`` and ``cuda`` from torch/version.py (``cuda`` is None on CPU-only builds)."""
    version = re.search(r"^__version__\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    cuda = re.search(r"^cuda\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return (version.group(1) if version else None, cuda.group(1) if cuda else None)


async def _site_dirs(probe: Probe, root: str, prefix: str) -> list[str]:
    """``PREFIX/lib/python3*/{site,dist}-packages`` (as the process sees them)."""
    listing = await probe.list_dir(f"{root}{prefix}/lib")
    out = []
    for entry in listing.entries or ():
        if entry == "python3":
            out.append(f"{prefix}/lib/python3/dist-packages")
        elif re.fullmatch(r"python3\.\d+", entry):
            out += [f"{prefix}/lib/{entry}/site-packages", f"{prefix}/lib/{entry}/dist-packages"]
    return out


async def _process_sites(probe: Probe, server: ServerProcess) -> list[str]:
    maps = await probe.text(f"/proc/{server.pid}/maps")
    sites = sorted({m.group(1) for m in re.finditer(_MAPS_TORCH, maps or "")})
    if sites:
        return sites
    interpreters = [a for a in server.argv[:1] if a.startswith("/") and "python" in posixpath.basename(a)]
    exe = await probe.readlink(f"/proc/{server.pid}/exe")
    if exe and exe.startswith("/"):
        interpreters.append(exe)
    found: list[str] = []
    for interpreter in interpreters:
        prefix = posixpath.dirname(posixpath.dirname(interpreter))
        found += await _site_dirs(probe, server.root, prefix)
    return list(dict.fromkeys(found))


async def _generic_sites(probe: Probe) -> list[str]:
    prefixes = list(GENERIC_PREFIXES)
    opt = await probe.list_dir("/opt")
    for entry in (opt.entries or ())[:_OPT_LIMIT]:
        prefixes += [f"/opt/{entry}", f"/opt/{entry}/venv", f"/opt/{entry}/.venv"]
    per_prefix = await probe.gather(*[lambda p=p: _site_dirs(probe, "", p) for p in prefixes])
    return [site for sites in per_prefix for site in sites]


async def _read_install(probe: Probe, site: str, root: str, server: ServerProcess | None) -> TorchInstall | None:
    path = f"{root}{site}/torch/version.py"
    text = await probe.text(path)
    if text is None:
        return None
    version, cuda = parse_torch_version(text)
    return TorchInstall(site, path, version, cuda, server)


async def find_torch(probe: Probe) -> TorchSearch:
    """torch of the visible servers (one install each), else of the system's well-known prefixes (memoized reads)."""
    scan = await find_servers(probe)
    installs: list[TorchInstall] = []
    searched: list[str] = []
    for server in scan.servers[:8]:
        sites = await _process_sites(probe, server)
        searched += [f"{server.root}{s}" for s in sites]
        found = await probe.gather(*[lambda s=s: _read_install(probe, s, server.root, server) for s in sites])
        installs += [i for i in found if i is not None][:1]
    if not installs:
        sites = await _generic_sites(probe)
        searched += sites
        found = await probe.gather(*[lambda s=s: _read_install(probe, s, "", None) for s in sites])
        installs += [i for i in found if i is not None]
    return TorchSearch(tuple(installs), tuple(searched))


def dist_version(entries: tuple[str, ...] | None, project: str) -> tuple[str, str] | None:
    """(dist-info folder, version) of ``project`` (``nvidia_nccl_cu12``) in a site-packages listing."""
    prefix = project.replace("-", "_").lower() + "-"
    for entry in entries or ():
        if entry.lower().startswith(prefix) and entry.endswith(".dist-info"):
            return entry, entry[len(prefix) : -len(".dist-info")]
    return None


def required_version(metadata: str | None, project: str) -> str | None:
    """The ``==`` pin of ``project`` in a wheel's METADATA (``Requires-Dist: nvidia-nccl-cu12==2.27.3; ...``)."""
    wanted = re.sub(r"[-_.]+", "-", project).lower()
    for line in (metadata or "").splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        match = re.match(r"Requires-Dist:\s*([A-Za-z0-9_.\-]+)\s*\(?\s*==\s*([0-9][^;,\s)]*)", line)
        if match and re.sub(r"[-_.]+", "-", match.group(1)).lower() == wanted:
            return match.group(2)
    return None
