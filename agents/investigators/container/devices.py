"""container.gpu_devices: GPU device nodes passed into containers and allowed by their cgroup."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cdi import regenerate_spec_fix
from rigaudit.agents.facts.lxc import NVIDIA_MAJOR, DeviceAllow, LxcConfig
from rigaudit.agents.investigators.container import premises
from rigaudit.agents.investigators.container.facts import (
    ContainerFacts,
    gpu_minors,
    gpu_nodes,
    lxc_fix,
    no_gpu_here,
    node_span,
    uvm_major,
)
from rigaudit.tools.hosts.probe import dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

CTL_MINOR = 255


def _lxc_device_problems(f: ContainerFacts, config: LxcConfig, others: set[int]) -> list[tuple[Severity, str]]:
    out: list[tuple[Severity, str]] = []
    passed_nodes = config.mounted_nodes | config.dev_nodes
    mounted = config.mounted_nodes
    uvm = uvm_major(f.proc_devices)
    missing_gpus = [m for m in gpu_minors(f) if f"/dev/nvidia{m}" not in passed_nodes and m not in others]
    if missing_gpus:
        out.append(("medium", f"{node_span(missing_gpus)} not passed in (and not given to another container)"))
    for node in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        if node not in passed_nodes:
            out.append(("high", f"{node} not passed in"))
    needs = [(f"/dev/nvidia{m}", NVIDIA_MAJOR, m) for m in gpu_minors(f)]
    needs.append(("/dev/nvidiactl", NVIDIA_MAJOR, CTL_MINOR))
    if uvm is not None:
        needs.append(("/dev/nvidia-uvm", uvm, 0))
    denied = [node for node, major, minor in needs if node in mounted and not config.allowed(major, minor)]
    if denied:
        out.append(("high", f"cgroup does not allow {', '.join(denied)} (lxc.cgroup2.devices.allow)"))
    return out


def _rule_text(rule: DeviceAllow, uvm: int | None) -> str:
    text = f"{rule.kind} {rule.major}:{rule.minor}"
    names = {str(NVIDIA_MAJOR): "nvidia", str(uvm): "nvidia-uvm"}
    return f"{text} ({names[rule.major]})" if rule.major in names else text


GPU_DEVICES_CHECK = Check(
    "container.gpu_devices",
    "GPU device nodes in containers",
    reads="`/dev/nvidia*`; LXC `lxc.cgroup2.devices.allow`, `lxc.mount.entry`, `devN:` entries; `/proc/devices`",
    problem="a GPU, nvidiactl or nvidia-uvm not passed in or not allowed by the cgroup",
    fix="edit the container config",
    kinds=("restart",),
    premises=(premises.PLATFORM, premises.GPUS),
    layer="workload",
)


def judge_gpu_devices(f: ContainerFacts) -> Finding:
    if (none_here := no_gpu_here(GPU_DEVICES_CHECK, f)) is not None:
        return none_here
    if f.platform.in_container:
        return _judge_inside(f)
    if f.platform.kind == "vm" and not f.lxc.configs:
        return GPU_DEVICES_CHECK.not_applicable("a VM guest: GPUs arrive by PCI passthrough (see pcie and driver)")
    gpu_configs = f.lxc.gpu_configs
    refs = (*(c.ref for c in f.lxc.configs), file_ref("/proc/devices"))
    if not gpu_configs:
        why = "no container config on this host passes GPUs" if f.lxc.configs else "not a container, and hosts no LXC containers"
        return GPU_DEVICES_CHECK.not_applicable(why, evidence=refs)
    uvm = uvm_major(f.proc_devices)
    found: list[tuple[LxcConfig, Severity, str]] = []
    for config in gpu_configs:
        others = {m for c in gpu_configs if c is not config for m in gpu_nodes(c)}
        found += [(config, sev, text) for sev, text in _lxc_device_problems(f, config, others)]
    if not found:
        uvm_note = "" if uvm is not None else " (nvidia-uvm major unknown: /proc/devices unreadable)"
        parts = [
            f"container {c.ctid}: {node_span(gpu_nodes(c))}, nvidiactl, nvidia-uvm passed in; cgroup allows "
            + (", ".join(_rule_text(r, uvm) for r in c.allows) or "them through devN entries")
            for c in gpu_configs
        ]
        return GPU_DEVICES_CHECK.ok(
            "; ".join(parts) + uvm_note,
            expected="every GPU, nvidiactl and nvidia-uvm passed in and allowed by the cgroup",
            evidence=refs,
        )
    config = found[0][0]
    severity: Severity = "high" if any(s == "high" for _, s, _ in found) else "medium"
    lines = [f"lxc.cgroup2.devices.allow: c {NVIDIA_MAJOR}:* rwm"]
    if uvm is not None:
        lines.append(f"lxc.cgroup2.devices.allow: c {uvm}:* rwm")
    lines += [
        f"lxc.mount.entry: {n} {n[1:]} none bind,optional,create=file"
        for n in [*(f"/dev/nvidia{m}" for m in gpu_minors(f)), "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
        if n not in config.mounted_nodes | config.dev_nodes
    ]
    return GPU_DEVICES_CHECK.problem_at(
        severity,
        "; ".join(f"container {c.ctid}: {text}" for c, _, text in found),
        "every GPU, nvidiactl and nvidia-uvm passed in and allowed by the cgroup",
        "A container sees a GPU only if its device node is mounted in and its cgroup allows the major:minor. Without "
        "nvidiactl or nvidia-uvm, CUDA cannot initialise at all (NVML may still list GPUs); a missing /dev/nvidiaN "
        "silently shrinks the GPUs the server can use.",
        lxc_fix(config, uvm, f"Pass the missing devices into container {config.ctid}", lines),
        subjects=tuple(f"container {c.ctid}" for c, _, _ in found),
        evidence=refs,
    )


def _missing_nodes(f: ContainerFacts, present: set[str]) -> tuple[list[str], list[int]]:
    """What is missing from this container's /dev, and the /dev/nvidiaN minors it has."""
    problems: list[str] = []
    for node in ("nvidiactl", "nvidia-uvm"):
        if node not in present:
            problems.append(f"/dev/{node} missing")
    minors_by_index = {g.index: f.minors[g.bdf] for g in f.inventory.gpus if g.index is not None and g.bdf in f.minors}
    missing = sorted(m for m in minors_by_index.values() if f"nvidia{m}" not in present)
    if missing:
        problems.append(f"{node_span(missing)} missing for GPUs NVML lists")
    gpu_nodes = sorted(int(e[6:]) for e in present if re.fullmatch(r"nvidia\d+", e))
    if not gpu_nodes and f.minors:
        problems.append(f"no /dev/nvidiaN at all while the host driver has {len(f.minors)} GPUs")
    return problems, gpu_nodes


def _pass_nodes_fix(f: ContainerFacts) -> Fix:
    """Recreate a Docker container with --gpus all; have the host's config of another pass each node."""
    docker = f.platform.kind == "docker"
    return Fix(
        kind="restart",
        where="container_config",
        summary="Pass the GPU device nodes into the container"
        + (" (docker run --gpus all with the NVIDIA container toolkit)" if docker else " (its config on the host)"),
        actions=(
            CommandAction(
                description="docker: recreate with --gpus all (or --device for each /dev/nvidia*, nvidiactl, nvidia-uvm)"
                if docker
                else "on the host: add lxc.mount.entry and lxc.cgroup2.devices.allow lines for each missing node, "
                "then restart the container"
            ),
        ),
        risk="medium",
        verify="ls -l /dev/nvidia* inside the container shows every node; nvidia-smi -L lists every GPU",
        revert="recreate/restart the container with its previous config",
        persist="the container's config",
    )


def _judge_inside(f: ContainerFacts) -> Finding:
    refs = (dir_ref("/dev"), *(file_ref(f"/proc/driver/nvidia/gpus/{b}/information") for b in f.minors))
    if f.dev_entries is None:
        return GPU_DEVICES_CHECK.unknown(f"/dev not listable: {f.dev_error}", evidence=refs)
    problems, gpu_nodes = _missing_nodes(f, set(f.dev_entries))
    host_total = len(f.minors)
    if not problems:
        share = f" of the host's {host_total}" if host_total and host_total != len(gpu_nodes) else ""
        return GPU_DEVICES_CHECK.ok(
            f"{node_span(gpu_nodes)}{share}, nvidiactl, nvidia-uvm present",
            expected="a node for every GPU, nvidiactl and nvidia-uvm",
            evidence=refs,
        )
    if problems == ["/dev/nvidia-uvm missing"] and f.proc_devices is not None and uvm_major(f.proc_devices) is None:
        return _no_uvm_on_the_host(f, refs)
    return GPU_DEVICES_CHECK.problem_at(
        "high",
        "; ".join(problems),
        "a node for every GPU, nvidiactl and nvidia-uvm",
        "CUDA opens /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidiaN for each GPU; without them it fails to "
        "initialise or sees fewer GPUs than the server was told to use.",
        regenerate_spec_fix(f.cdi, ", ".join(p.split()[0] if p.startswith("/dev/") else "the GPUs' nodes" for p in problems))
        if f.cdi.given
        else _pass_nodes_fix(f),
        evidence=refs,
    )


def _no_uvm_on_the_host(f: ContainerFacts, refs: tuple[str, ...]) -> Finding:
    """No /dev/nvidia-uvm, and the kernel (the host's: a container shares it) registered no nvidia-uvm device: the
    module is not loaded on the host, so no container option can pass the node in."""
    fix = Fix(
        kind="restart",
        where="container_host",
        summary="Load nvidia-uvm on the host (see driver.uvm there), then restart the container so the node is passed in",
        actions=(
            CommandAction(
                description="on the host: modprobe nvidia-uvm (nvidia-modprobe -u -c=0 also makes /dev/nvidia-uvm); if it "
                "does not load, the host's kernel log says why; then restart the container",
            ),
        ),
        risk="low",
        verify="grep nvidia-uvm /proc/devices, then ls -l /dev/nvidia-uvm inside the container",
        revert="rmmod nvidia_uvm on the host (with no GPU user)",
    )
    return GPU_DEVICES_CHECK.problem_at(
        "high",
        "/dev/nvidia-uvm missing, and /proc/devices lists no nvidia-uvm: the host's kernel has not loaded the module",
        "nvidia-uvm loaded on the host and its node passed in",
        "CUDA opens /dev/nvidia-uvm to initialise. The container shares the host's kernel, whose /proc/devices has no "
        "nvidia-uvm: the module is not loaded there, so the container's options are not the cause and recreating the "
        "container with --gpus all changes nothing until the host loads it.",
        fix,
        evidence=(*refs, file_ref("/proc/devices")),
    )
