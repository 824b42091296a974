"""runtime.cuda_driver_compat and runtime.device_order: the CUDA runtime against the driver, and GPU numbering."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import (
    FORWARD_COMPAT,
    MINOR_COMPAT,
    MINOR_COMPAT_MIN,
    CompatLibrary,
    compat_library,
    forward_compat_support,
    minor_compatible,
)
from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.nvml_reads import nvml_unusable
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import ServerProcess
from rigaudit.agents.facts.python_env import TorchInstall
from rigaudit.agents.investigators.forward_compat import after_drop, deferred, drop_compat_fix
from rigaudit.agents.investigators.runtime import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import NvmlResult
from rigaudit.tools.hosts.probe import Probe, file_ref, nvml_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity, Where

CUDA_DRIVER_FN = "nvmlSystemGetCudaDriverVersion"
_UUID = r"(?i)^(GPU|MIG)-"


class CudaCompatFacts(Record):
    platform: Platform
    inventory: GpuInventory
    driver_cuda: NvmlResult
    compat: tuple[CompatLibrary, ...] = ()
    """Forward-compatibility libcuda the servers map (cuda-compat), each once."""
    compat_refs: tuple[str, ...] = ()
    compat_in_container: bool = False
    """A server that maps a compat libcuda runs in a container."""


_MAPPED_LIBCUDA = r"(?m)\s(/\S*/libcuda\.so\.\d+\.\d+(?:\.\d+)?)\s*$"


async def collect_cuda(
    probe: Probe, inventory: GpuInventory, platform: Platform, servers: tuple[ServerProcess, ...] = ()
) -> CudaCompatFacts:
    found: dict[str, CompatLibrary] = {}
    refs: list[str] = []
    inside = False
    for server in servers:
        maps = await probe.text(f"/proc/{server.pid}/maps")
        refs.append(file_ref(f"/proc/{server.pid}/maps"))
        for match in re.finditer(_MAPPED_LIBCUDA, maps or ""):
            if (lib := compat_library(match.group(1))) is not None:
                found.setdefault(lib.path, lib)
                inside = inside or bool(server.container) or bool(server.foreign_mnt_ns)
    driver = await probe.nvml(CUDA_DRIVER_FN)
    return CudaCompatFacts(platform, inventory, driver, tuple(found.values()), tuple(refs), compat_in_container=inside)


def cuda_tuple(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_cuda(value: object) -> tuple[int, int] | None:
    """13000 -> (13, 0); 12080 -> (12, 8)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value // 1000, value % 1000 // 10
    return None


def _driver_where(platform: Platform) -> Where:
    return layer_where(platform, "gpu_driver")


CUDA_DRIVER_COMPAT_CHECK = Check(
    "runtime.cuda_driver_compat",
    "CUDA runtime of the server vs the driver's CUDA version",
    reads="torch's CUDA version (`torch/version.py`), NVML `nvmlSystemGetCudaDriverVersion`",
    problem="the runtime's major version is newer than the driver supports (high: CUDA init fails); a newer minor "
    "(low: minor-version compatibility, PTX JIT excepted); a compat libcuda on GeForce (driver.library_mismatch's)",
    fix="newer driver, or a torch build for the driver's CUDA; on GeForce, drop the forward-compatibility path",
    kinds=("reboot",),
    premises=(premises.SERVERS, premises.PACKAGES, premises.GPUS),
    layer="workload",
)


def _runtimes_against(
    f: CudaCompatFacts, with_cuda: list[TorchInstall], supported: tuple[int, int], note: str, refs: tuple[str, ...]
) -> Finding:
    """Each torch build's CUDA runtime against the CUDA version the driver supports (``note``: what lifted it)."""
    drv = f"{supported[0]}.{supported[1]}"
    rows = [(i, cuda_tuple(i.cuda) or (0, 0)) for i in with_cuda]
    newer_major = [(i, v) for i, v in rows if v[0] > supported[0]]
    newer_minor = [(i, v) for i, v in rows if v[0] == supported[0] and v > supported]
    described = "; ".join(
        f"torch {i.version or '?'} built for CUDA {i.cuda} at {i.site}" + (f" ({i.server.label})" if i.server else "")
        for i, _ in rows
    )
    if not newer_major and not newer_minor:
        return CUDA_DRIVER_COMPAT_CHECK.ok(
            f"{described}; the driver supports CUDA up to {drv}{note}",
            expected=f"CUDA runtime <= {drv}",
            explanation=f"Deliberate: {FORWARD_COMPAT.what} ({FORWARD_COMPAT.source}); see driver.library_mismatch."
            if note
            else "",
            evidence=refs,
        )
    bad = newer_major or newer_minor
    target = bad[0][0]
    wanted = max(v for _, v in bad)
    severity: Severity = "high" if newer_major else "low"
    if not target.server:
        severity = "low"
    fix, explanation = _newer_runtime(f, target, wanted, supported, bool(newer_major))
    return CUDA_DRIVER_COMPAT_CHECK.problem_at(
        severity,
        f"{described}; the driver supports CUDA up to {drv}",
        f"CUDA runtime <= {drv}",
        explanation,
        fix,
        subjects=tuple(i.site for i, _ in bad),
        evidence=refs,
    )


def judge_cuda_driver_compat(f: CudaCompatFacts, installs: tuple[TorchInstall, ...], no_torch: str) -> Finding:
    ref = nvml_ref(CUDA_DRIVER_FN, ())
    if not installs:
        return CUDA_DRIVER_COMPAT_CHECK.unknown(no_torch, evidence=(ref,))
    judged = [i for i in installs if i.server is not None] or list(installs)
    refs = (*(file_ref(i.version_file) for i in judged), ref)
    with_cuda = [i for i in judged if cuda_tuple(i.cuda) is not None]
    if not with_cuda:
        return CUDA_DRIVER_COMPAT_CHECK.not_applicable(
            "CPU-only torch build: no CUDA runtime (see runtime.torch_cuda)", evidence=refs
        )
    supported = driver_cuda(f.driver_cuda.value) if f.driver_cuda.ok else None
    if supported is None:
        error = f.driver_cuda.error or f"unexpected value {f.driver_cuda.value!r}"
        shown = "not recorded in this snapshot" if error == "NOT_RECORDED" else error
        return CUDA_DRIVER_COMPAT_CHECK.unknown(f"{CUDA_DRIVER_FN}: {shown}", evidence=refs)
    names = tuple(dict.fromkeys(g.name for g in f.inventory.gpus if g.name))
    compat = [c for c in f.compat if c.cuda is not None and c.cuda > supported]
    if compat and forward_compat_support(names) == "no":
        return _deferred_to_library(f, compat[0], supported, names, refs)
    if compat and forward_compat_support(names) == "yes":
        lifted = max(c.cuda for c in compat if c.cuda is not None)
        refs = (*refs, *f.compat_refs)
        note = (
            f"; the servers map {compat[0].path}: CUDA forward compatibility lifts it to {lifted[0]}.{lifted[1]} on "
            f"{', '.join(names)}"
        )
        supported = lifted
    else:
        note = ""
    return _runtimes_against(f, with_cuda, supported, note, refs)


def _deferred_to_library(
    f: CudaCompatFacts, compat: CompatLibrary, driver: tuple[int, int], names: tuple[str, ...], refs: tuple[str, ...]
) -> Finding:
    """The server maps a compat libcuda on GPUs NVIDIA does not support it on: driver.library_mismatch's verdict."""
    kernel = f.inventory.driver_version
    where: Where = "container" if f.compat_in_container or f.platform.in_container else "host"
    fix = deferred(drop_compat_fix(compat.path, kernel, where, compat.cuda, driver))
    cuda = f"CUDA {compat.cuda[0]}.{compat.cuda[1]}" if compat.cuda else "a newer CUDA"
    return CUDA_DRIVER_COMPAT_CHECK.problem_at(
        "high",
        f"the servers map {compat.path} ({cuda} by forward compatibility) on {', '.join(names)}, which NVIDIA does "
        f"not support: the cause is driver.library_mismatch's",
        "the host driver's libcuda (forward compatibility is not supported on GeForce)",
        f"CUDA initialization fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804) while the compat libcuda is "
        f"loaded ({FORWARD_COMPAT.source}); one cause, one fix: see driver.library_mismatch. "
        + after_drop(compat.cuda, driver, kernel),
        fix,
        subjects=(compat.path,),
        evidence=(*refs, *f.compat_refs),
    )


def _newer_runtime(
    f: CudaCompatFacts, target: TorchInstall, wanted: tuple[int, int], supported: tuple[int, int], newer_major: bool
) -> tuple[Fix, str]:
    """The fix and explanation of a runtime newer than the driver: a newer major needs a driver; a newer minor runs
    by minor-version compatibility on a driver at least its major's minimum, PTX JIT of newer PTX excepted."""
    drv = f"{supported[0]}.{supported[1]}"
    want = f"{wanted[0]}.{wanted[1]}"
    version = f.inventory.driver_version
    covered = not newer_major and minor_compatible(wanted[0], version) is True
    actions = (
        CommandAction(
            description=f"install a driver branch whose CUDA version is >= {want} (nvidia-smi's 'CUDA Version' after "
            "the reboot), then reboot"
        ),
        CommandAction(
            description=f"or, without touching the driver: in {target.site}, install the serving framework's torch "
            f"build for CUDA <= {drv} and restart the server"
        ),
    )
    summary = (
        f"Nothing is needed for the server to start (CUDA minor-version compatibility); only if a library JIT-compiles "
        f"PTX of CUDA {want} ('unsupported toolchain'), install a driver of CUDA >= {want}"
        if covered
        else f"Install a driver that supports CUDA {want} (or a torch build for CUDA <= {drv})"
    )
    fix = Fix(
        kind="reboot",
        where=_driver_where(f.platform),
        summary=summary,
        actions=actions,
        risk="medium",
        verify=f"nvidia-smi shows CUDA Version >= {want}; python -c 'import torch; torch.cuda.init()' "
        "in the serving environment raises nothing",
        revert="reinstall the previous driver (or torch build)",
        persist="installed packages persist",
    )
    if newer_major:
        return fix, (
            f"The server's CUDA runtime is of a newer major version than the driver supports (CUDA {drv}): CUDA "
            "initialization fails with 'The NVIDIA driver on your system is too old' / 'CUDA driver version is "
            "insufficient for CUDA runtime version', so the server cannot use the GPUs at all. The CUDA forward-"
            "compatibility package (cuda-compat) lifts this only on datacenter GPUs and only for the libraries it ships."
        )
    least = MINOR_COMPAT_MIN.get(wanted[0], "?")
    held = (
        f"the {version} driver is at least {least}, the least driver of CUDA {wanted[0]}.x's minor-version compatibility"
        if covered
        else f"minor-version compatibility needs a driver >= {least} (this one: {version or 'not read'})"
    )
    return fix, (
        f"The runtime is a newer minor release of the same major version than the driver's CUDA {drv}; {held} "
        f"({MINOR_COMPAT.source}). CUDA's minor-version compatibility lets it run, but PTX compiled by the newer "
        "toolkit cannot be JIT-compiled by this driver ('the provided PTX was compiled with an unsupported "
        "toolchain'), which breaks libraries that ship PTX or JIT-compile kernels at run time; features added in the "
        "newer minor release are unavailable."
    )


def _visible(env: dict[str, str]) -> str | None:
    value = env.get("CUDA_VISIBLE_DEVICES")
    return value.strip() if value is not None else None


DEVICE_ORDER_CHECK = Check(
    "runtime.device_order",
    "CUDA device order vs NVML/PCI order",
    reads=("NVML GPU names and PCI bus ids by index, `CUDA_DEVICE_ORDER` / `CUDA_VISIBLE_DEVICES` in the servers' environment"),
    problem="mixed GPU models (or NVML out of PCI order) and a server without `CUDA_DEVICE_ORDER=PCI_BUS_ID` or UUIDs",
    fix="set `CUDA_DEVICE_ORDER=PCI_BUS_ID`",
    kinds=("restart",),
    premises=(premises.GPUS, premises.SERVERS, premises.NVML),
    layer="workload",
)


_Unordered = tuple[ServerProcess, str, str | None]
"""(server, its CUDA_DEVICE_ORDER as shown, its CUDA_VISIBLE_DEVICES)."""


def _unordered(readable: list[tuple[ServerProcess, dict[str, str]]]) -> list[_Unordered]:
    """The servers that neither set CUDA_DEVICE_ORDER=PCI_BUS_ID nor name their GPUs by UUID."""
    bad: list[_Unordered] = []
    for server, env in readable:
        order = env.get("CUDA_DEVICE_ORDER", "").strip()
        visible = _visible(env)
        by_uuid = visible is not None and visible != "" and all(re.match(_UUID, v.strip()) for v in visible.split(","))
        if order != "PCI_BUS_ID" and not by_uuid:
            bad.append((server, order or "unset (FASTEST_FIRST)", visible))
    return bad


def _pci_order_fix(f: CudaCompatFacts, bad: list[_Unordered]) -> Fix:
    return Fix(
        kind="restart",
        where="container" if f.platform.in_container or any(s.container or s.foreign_mnt_ns for s, _, _ in bad) else "host",
        summary="Start the server with CUDA_DEVICE_ORDER=PCI_BUS_ID (or name GPUs by UUID in CUDA_VISIBLE_DEVICES)",
        actions=(
            CommandAction(
                description="add CUDA_DEVICE_ORDER=PCI_BUS_ID to the server's unit, container environment or launch script"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify="tr '\\0' '\\n' < /proc/PID/environ of the server shows CUDA_DEVICE_ORDER=PCI_BUS_ID; the GPUs the server "
        "holds (nvidia-smi) are the ones it was told to use",
        revert="remove the variable and restart",
        persist="the edited launch config persists",
    )


def judge_device_order(
    f: CudaCompatFacts,
    servers: tuple[ServerProcess, ...],
    environs: dict[int, tuple[dict[str, str] | None, str | None]],
) -> Finding:
    if why := nvml_unusable(f.inventory):
        return DEVICE_ORDER_CHECK.unknown(why)
    gpus = sorted((g for g in f.inventory.gpus if g.index is not None), key=lambda g: g.index or 0)
    refs = tuple(nvml_ref("nvmlDeviceGetPciInfo", (g.index or 0,)) for g in gpus) + tuple(
        nvml_ref("nvmlDeviceGetName", (g.index or 0,)) for g in gpus
    )
    models = sorted({g.name for g in gpus})
    pci_order = [g.bdf for g in gpus] == sorted(g.bdf for g in gpus)
    if len(models) <= 1 and pci_order:
        return DEVICE_ORDER_CHECK.ok(
            f"{len(gpus)} × {models[0] if models else 'GPU'} in PCI bus order (NVML index = PCI order)",
            expected="CUDA, NVML and PCI orders agree",
            explanation="With identical GPUs CUDA's default FASTEST_FIRST order has no faster GPU to move forward, so "
            "CUDA indices, nvidia-smi indices and PCI order agree whether or not CUDA_DEVICE_ORDER is set.",
            evidence=refs,
        )
    causes: list[str] = []
    if len(models) > 1:
        causes.append(f"mixed models ({', '.join(models)})")
    if not pci_order:
        causes.append("NVML indices are not in PCI bus order (" + ", ".join(f"{g.index}={g.bdf}" for g in gpus) + ")")
    reason = "; ".join(causes)
    env_refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in servers)
    readable = [(s, env) for s in servers if (env := environs.get(s.pid, (None, None))[0]) is not None]
    if not readable:
        searched = "no inference server process found" if not servers else "the servers' environments are not readable"
        return DEVICE_ORDER_CHECK.unknown(
            f"{reason}: CUDA's default order may differ from nvidia-smi's, but {searched} to see CUDA_DEVICE_ORDER",
            evidence=refs + env_refs,
        )
    bad = _unordered(readable)
    if not bad:
        return DEVICE_ORDER_CHECK.ok(
            f"{reason}; the servers use CUDA_DEVICE_ORDER=PCI_BUS_ID or GPU UUIDs",
            expected="CUDA_DEVICE_ORDER=PCI_BUS_ID (or UUIDs in CUDA_VISIBLE_DEVICES)",
            evidence=refs + env_refs,
        )
    return DEVICE_ORDER_CHECK.problem_at(
        "medium",
        f"{reason}; "
        + "; ".join(
            f"{s.label}: CUDA_DEVICE_ORDER {order}, CUDA_VISIBLE_DEVICES={visible if visible is not None else 'unset'}"
            for s, order, visible in bad
        ),
        "CUDA_DEVICE_ORDER=PCI_BUS_ID (or UUIDs in CUDA_VISIBLE_DEVICES)",
        "CUDA numbers GPUs fastest first by default, nvidia-smi and NVML in PCI bus order. On a host with mixed models "
        "(or NVML indices out of PCI order) CUDA device 0 is not nvidia-smi's GPU0: CUDA_VISIBLE_DEVICES=0,1 then "
        "selects other GPUs than the operator meant (a display card, GPUs on the far socket, GPUs another server "
        "uses), and per-GPU tuning, NUMA binding and monitoring point at the wrong cards.",
        _pci_order_fix(f, bad),
        subjects=tuple(s.label for s, _, _ in bad),
        evidence=refs + env_refs,
    )
