"""runtime: the serving Python's torch build against the GPUs' architecture, and debug variables left on.

No interpreter is ever run (the policy denies interpreters given code): torch's ``version.py`` is read as a file,
found through the server process (its memory maps, its interpreter path) or well-known site-packages folders.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from agents.facts.gpus import GpuInventory, collect_gpus
from agents.facts.lxc import LxcConfigs, read_lxc_configs
from agents.facts.nvml_reads import GpuReads, read_per_gpu
from agents.facts.platform import Platform, detect_platform
from agents.facts.processes import ServerProcess, ServerScan, find_servers, parse_environ
from agents.findings import ok, problem, unknown
from agents.investigator import Investigator
from tools.model.finding import Area, CommandAction, Finding, Fix, Severity, Where
from tools.probe import Probe, file_ref
from tools.redact import redact_text

AREA: Area = "runtime"
CHECKS = ("runtime.torch_cuda", "runtime.env")
CUDA_FOR_ARCH: dict[tuple[int, int], tuple[int, int]] = {
    (7, 0): (9, 0),
    (7, 5): (10, 0),
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 3): (12, 9),
    (12, 0): (12, 8),
    (12, 1): (12, 9),
}
"""The first CUDA release that compiles for each compute capability."""
GENERIC_PREFIXES = ("/usr", "/usr/local")
_OPT_LIMIT = 16
_MAPS_TORCH = re.compile(r"\s(/\S+?)/torch/(?:lib/libtorch|_C)")


@dataclass(frozen=True)
class TorchInstall:
    site: str
    """The site-packages folder as the process sees it."""
    version_file: str
    """The path read (through /proc/PID/root for a process in another mount namespace)."""
    version: str | None
    cuda: str | None
    server: ServerProcess | None


@dataclass(frozen=True)
class RuntimeFacts:
    inventory: GpuInventory
    platform: Platform
    lxc: LxcConfigs
    scan: ServerScan
    capability: GpuReads
    installs: tuple[TorchInstall, ...]
    searched: tuple[str, ...]
    environs: dict[int, tuple[dict[str, str] | None, str | None]]


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
    sites = sorted({m.group(1) for m in _MAPS_TORCH.finditer(maps or "")})
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


async def collect(probe: Probe) -> RuntimeFacts:
    inventory = await collect_gpus(probe)
    platform = await detect_platform(probe)
    lxc = await read_lxc_configs(probe, platform)
    scan = await find_servers(probe)
    capability = await read_per_gpu(probe, inventory, "nvmlDeviceGetCudaComputeCapability")
    servers = scan.servers[:8]
    installs: list[TorchInstall] = []
    searched: list[str] = []
    for server in servers:
        sites = await _process_sites(probe, server)
        searched += [f"{server.root}{s}" for s in sites]
        found = await probe.gather(*[lambda s=s: _read_install(probe, s, server.root, server) for s in sites])
        installs += [i for i in found if i is not None][:1]
    if not installs:
        sites = await _generic_sites(probe)
        searched += sites
        found = await probe.gather(*[lambda s=s: _read_install(probe, s, "", None) for s in sites])
        installs += [i for i in found if i is not None]
    environ_reads = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers[:16]])
    environs = {s.pid: (parse_environ(r.data), r.error) for s, r in zip(scan.servers[:16], environ_reads, strict=True)}
    return RuntimeFacts(inventory, platform, lxc, scan, capability, tuple(installs), tuple(searched), environs)


def _version_tuple(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _capabilities(f: RuntimeFacts) -> set[tuple[int, int]]:
    out = set()
    for index in f.capability.results:
        value = f.capability.value(index)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            out.add((value[0], value[1]))
    return out


def _where(f: RuntimeFacts, server: ServerProcess | None) -> Where:
    inside = f.platform.in_container or (server is not None and (bool(server.container) or bool(server.foreign_mnt_ns)))
    return "container" if inside else "host"


def _no_torch_reason(f: RuntimeFacts) -> str:
    if f.scan.servers:
        names = ", ".join(s.label for s in f.scan.servers[:4])
        return f"torch not found for the server ({names}): no libtorch in its memory maps, no torch/version.py by its interpreter"
    hint = ""
    if f.lxc.gpu_configs and not f.platform.in_container:
        ids = ", ".join(c.ctid for c in f.lxc.gpu_configs)
        hint = f" (the server likely runs inside LXC container {ids}, which holds the GPUs; no process of it is visible)"
    return f"no serving Python found on this host{hint}"


def judge_torch_cuda(f: RuntimeFacts) -> Finding:
    check, title = "runtime.torch_cuda", "torch build vs GPU architecture"
    refs = tuple(file_ref(i.version_file) for i in f.installs) + f.capability.refs
    if not f.installs:
        searched = f"; searched {f.scan.searched} and {len(f.searched)} site-packages folders"
        return unknown(check, AREA, title, _no_torch_reason(f) + searched, evidence=f.capability.refs)
    confirmed = [i for i in f.installs if i.server is not None]
    judged = confirmed or list(f.installs)
    caps = _capabilities(f)
    arch = ", ".join(f"sm_{a}{b}" for a, b in sorted(caps)) or "unknown architecture"
    needs = [CUDA_FOR_ARCH[c] for c in caps if c in CUDA_FOR_ARCH]
    need = max(needs) if needs else None
    need_text = f"{need[0]}.{need[1]}" if need else "unknown"
    described = "; ".join(
        f"torch {i.version or '?'} (CUDA {i.cuda or 'none: CPU-only build'}) at {i.site}"
        + (f" used by {i.server.label}" if i.server else "")
        for i in judged
    )
    observed = f"{described}; GPUs {arch} need CUDA ≥ {need_text}; compiled arch list unknown (not in a file)"
    bad = [i for i in judged if i.cuda is None or (need is not None and (_version_tuple(i.cuda) or (0, 0)) < need)]
    if not bad:
        if need is None:
            return unknown(check, AREA, title, f"{described}; the GPUs' compute capability is unknown", evidence=refs)
        note = "" if confirmed else " No running server confirms this is the serving Python."
        return ok(
            check,
            AREA,
            title,
            observed,
            expected=f"a CUDA ≥ {need_text} build whose arch list includes {arch}",
            explanation="The CUDA version of the build is new enough for these GPUs. The arch list itself is compiled "
            "into libtorch_cuda.so; confirm it in the serving environment with torch.cuda.get_arch_list()." + note,
            evidence=refs,
        )
    severity: Severity = "high" if confirmed else "low"
    target = bad[0]
    tag = f"cu{need[0]}{need[1]}" if need else "cu128"
    fix = Fix(
        kind="restart",
        where=_where(f, target.server),
        summary=f"Install a torch build for CUDA ≥ {need_text} in the serving environment, then restart the server",
        actions=(
            CommandAction(
                description=f"in the environment of {target.site}: pip install --upgrade torch --index-url "
                f"https://download.pytorch.org/whl/{tag} (matching the serving framework's pinned torch version)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="medium",
        verify=f"{target.site}/torch/version.py shows cuda ≥ {need_text}; torch.cuda.get_arch_list() includes {arch}",
        revert="reinstall the previous torch version from the pip cache",
        persist="the installed package persists",
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        observed,
        f"a CUDA ≥ {need_text} build whose arch list includes {arch}",
        "A torch built with an older CUDA carries no kernels for this architecture: CUDA either fails ('no kernel image "
        "is available for execution on the device') or JIT-compiles PTX at start-up and runs slower kernels."
        + (
            ""
            if confirmed
            else " This torch was found in a system folder, not through a running server: confirm it is "
            "the one serving before changing it."
        ),
        fix,
        subjects=tuple(i.site for i in bad),
        evidence=refs,
    )


def debug_variables(env: dict[str, str]) -> list[str]:
    """Variables that slow a server down or load a tool into it."""
    found = []
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() not in ("", "0"):
        found.append(f"CUDA_LAUNCH_BLOCKING={env['CUDA_LAUNCH_BLOCKING']}")
    for key in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        if env.get(key, "").strip():
            found.append(f"{key}={env[key]}")
    found += sorted(k for k in env if k.startswith(("NSYS_", "NV_COMPUTE_PROFILER", "NV_SANITIZER", "NCU_")))
    for key in ("CUDA_PROFILE", "COMPUTE_PROFILE", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        if env.get(key, "").strip() not in ("", "0"):
            found.append(f"{key}={env[key]}")
    preload = env.get("LD_PRELOAD", "")
    if any(tool in preload.lower() for tool in ("nsys", "nsight", "sanitizer", "injection", "ncu")):
        found.append(f"LD_PRELOAD={preload}")
    return [redact_text(item) for item in found]


def judge_env(f: RuntimeFacts) -> Finding:
    check, title = "runtime.env", "Debug and profiler variables in the server's environment"
    servers = f.scan.servers[:16]
    refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in servers)
    if not servers:
        return unknown(check, AREA, title, f"no inference server process found ({f.scan.searched})")
    hits: list[tuple[ServerProcess, list[str]]] = []
    unreadable = []
    for server in servers:
        env, error = f.environs.get(server.pid, (None, "not read"))
        if env is None:
            unreadable.append(f"{server.label}: {error}")
        elif found := debug_variables(env):
            hits.append((server, found))
    if not hits:
        readable = len(servers) - len(unreadable)
        if not readable:
            return unknown(check, AREA, title, "server environments not readable: " + "; ".join(unreadable), evidence=refs)
        return ok(
            check,
            AREA,
            title,
            f"no debug or profiler variable in {readable} server processes' environments",
            expected="no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
            evidence=refs,
        )
    variables = sorted({v.split("=")[0] for _, found in hits for v in found})
    fix = Fix(
        kind="restart",
        where=_where(f, hits[0][0]),
        summary="Unset " + ", ".join(variables) + " in the server's launch environment and restart it",
        actions=(
            CommandAction(
                description="remove them from the unit, container environment or launch script that starts "
                "the server (they are inherited by every worker)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify="after the restart, tr '\\0' '\\n' < /proc/PID/environ of the server shows none of them",
        revert="set them again and restart (only while debugging)",
        persist="the edited launch config persists",
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        "; ".join(f"{s.label}: {', '.join(found)}" for s, found in hits),
        "no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
        "CUDA_LAUNCH_BLOCKING=1 makes every kernel launch synchronous: CUDA graphs and launch overlap disappear and "
        "decode slows several-fold. Injection paths and NSYS/NCU variables load a profiler or sanitizer into every "
        "CUDA process; PYTORCH_NO_CUDA_MEMORY_CACHING turns off torch's allocator cache. All are debugging leftovers.",
        fix,
        subjects=tuple(s.label for s, _ in hits),
        evidence=refs,
    )


def judge(f: RuntimeFacts) -> list[Finding]:
    return [judge_torch_cuda(f), judge_env(f)]


INVESTIGATOR = Investigator(
    area=AREA, title="Serving runtime: torch build and environment", checks=CHECKS, collect=collect, judge=judge
)
