"""driver.cdi_spec: the host's CDI spec for its GPUs names the files and device nodes the host has.

Containers given GPUs by CDI (Podman, Docker 25+ with ``--device nvidia.com/gpu=all``, containerd/CRI-O) get exactly
the device nodes and driver files the spec lists, bind-mounted from their host paths; a spec generated for another
driver (its libraries named with the old version) or before ``nvidia_uvm`` loaded stops or breaks every container
started from it, however healthy the driver is (:mod:`rigaudit.agents.facts.cdi_spec`). The fix regenerates the spec
the engines read, by the means the host has: NVIDIA Container Toolkit 1.18's ``nvidia-cdi-refresh`` (enabled where it
is installed and disabled), else ``nvidia-ctk cdi generate`` at the spec's own path. Judged on the host: from inside a
container the spec is the host's and is not read.
"""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.cdi_spec import REFRESH, CdiSpecFile, HostCdi
from rigaudit.agents.facts.nvidia_driver import kernel_version
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.facts import DriverFacts, fix_where
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

CDI_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
WHY = (
    "A CDI spec lists the device nodes and driver files a container gets, bind-mounted from their host paths; NVIDIA's "
    "CDI guide: after a driver upgrade (or any change of the devices) a new spec must be generated. A container started "
    "from a spec that names files the host no longer has does not start (crun: error stat'ing file ...: No such file "
    f"or directory); one started from a spec that lacks /dev/nvidia-uvm fails CUDA initialization ({CDI_DOC})."
)

CDI_SPEC_CHECK = Check(
    "driver.cdi_spec",
    "The host's CDI spec for its GPUs",
    reads="`/etc/cdi` and `/var/run/cdi` spec files (kind nvidia.com/gpu): each `hostPath` and device `path` asked "
    "of the host; `/proc/driver/nvidia/version`; `/dev`; the toolkit's `nvidia-cdi-refresh.path` unit and "
    "`systemctl is-enabled` of it",
    problem="a spec naming driver files or device nodes the host does not have (generated for another driver), or "
    "lacking /dev/nvidia-uvm the host has: containers started from it fail",
    fix="generate the spec again where the engines read it: enable nvidia-cdi-refresh where it is installed, else "
    "`nvidia-ctk cdi generate --output=PATH`; then recreate the containers",
    kinds=("runtime",),
    premises=(premises.PLATFORM_FIX, premises.GPUS, premises.DRIVER),
)


def _regenerate(facts: DriverFacts, cdi: HostCdi, spec: CdiSpecFile) -> tuple[str, tuple[CommandAction, ...], str]:
    """(summary, actions, persist) by the means this host has to write ``spec`` again."""
    generate = ("nvidia-ctk", "cdi", "generate", f"--output={spec.path}")
    refreshed = spec.path.startswith(("/var/run/cdi/", "/run/cdi/"))
    if cdi.refresh_installed and refreshed and cdi.refresh_enabled is False:
        return (
            f"Enable {REFRESH}.path (installed, disabled: the spec did not follow the driver) and run its refresh now",
            (
                CommandAction(description="regenerate now", argv=("systemctl", "start", f"{REFRESH}.service")),
                CommandAction(
                    description="regenerate at every driver change from now on",
                    argv=("systemctl", "enable", "--now", f"{REFRESH}.path"),
                ),
            ),
            f"{REFRESH}.path enabled",
        )
    if cdi.refresh_installed and refreshed:
        return (
            f"Run {REFRESH} again and read why it left the spec behind the driver",
            (
                CommandAction(description="regenerate now", argv=("systemctl", "start", f"{REFRESH}.service")),
                CommandAction(description=f"read why the last refresh did not: journalctl -u {REFRESH}.service -n 50"),
            ),
            f"{REFRESH}.path enabled",
        )
    persist = (
        f"{spec.path} is not the {REFRESH} spec: regenerate it after each driver upgrade (or remove it and let "
        f"{REFRESH} write /var/run/cdi/nvidia.yaml)"
        if cdi.refresh_installed
        else f"run it after each driver upgrade, or use NVIDIA Container Toolkit 1.18+, whose {REFRESH} units "
        "regenerate /var/run/cdi/nvidia.yaml when the driver changes"
    )
    action = CommandAction(
        description="with the NVIDIA modules loaded, write the spec for the driver the host has", argv=generate
    )
    return f"Generate {spec.path} again for the driver and devices the host has", (action,), persist


def _stale(facts: DriverFacts, cdi: HostCdi, spec: CdiSpecFile, loaded: str | None, lacks: list[str]) -> Finding:
    summary, actions, persist = _regenerate(facts, cdi, spec)
    recreate = CommandAction(
        description="then recreate the containers that use it (podman rm and run again with --device nvidia.com/gpu=all; "
        "a rootless user's containers as that user)"
    )
    fix = Fix(
        kind="restart",
        where=fix_where(facts.platform),
        summary=summary + ", then recreate the containers",
        actions=(*actions, recreate),
        risk="low",
        verify=f"nvidia-ctk cdi list; every hostPath of {spec.path} exists (ls -l); a new container runs nvidia-smi",
        revert=f"restore the previous {spec.path}",
        persist=persist,
    )
    made_for = f"generated for driver {', '.join(spec.versions)}" if spec.versions else "no driver version in its file names"
    said = [f"{spec.path} ({made_for}; the loaded driver is {loaded or 'unread'})"]
    if spec.missing:
        shown = ", ".join(spec.missing[:4]) + (f" and {len(spec.missing) - 4} more" if len(spec.missing) > 4 else "")
        said.append(f"names {len(spec.missing)} path(s) the host does not have: {shown}")
    if lacks:
        said.append(f"lists no {', '.join(lacks)}, which the host has")
    return CDI_SPEC_CHECK.problem_at(
        "high",
        "; ".join(said),
        "a spec whose every path exists on the host and that lists the host's NVIDIA device nodes",
        WHY,
        fix,
        evidence=cdi.refs,
    )


def _lacks(facts: DriverFacts, spec: CdiSpecFile) -> list[str]:
    host = set(facts.dev or ())
    return [f"/dev/{n}" for n in ("nvidia-uvm", "nvidia-uvm-tools") if n in host and f"/dev/{n}" not in spec.nodes]


def judge_cdi_spec(facts: DriverFacts) -> Finding:
    if facts.platform.in_container:
        if facts.cdi.given:
            return CDI_SPEC_CHECK.unknown(
                f"this container got its GPUs by CDI ({facts.cdi.how}); the spec is the host's: on the host, "
                "nvidia-ctk cdi list and the hostPath entries of /etc/cdi/nvidia.yaml or /var/run/cdi/nvidia.yaml would tell"
            )
        return CDI_SPEC_CHECK.not_applicable(f"a container not given its GPUs by CDI ({facts.cdi.how})")
    cdi = facts.host_cdi
    if not facts.gpus:
        return CDI_SPEC_CHECK.not_applicable("no NVIDIA GPU")
    if cdi is None or (cdi.unread and not cdi.specs):
        why = "; ".join(cdi.unread) if cdi else "not read"
        return CDI_SPEC_CHECK.unknown(f"the CDI spec folders could not be read ({why}): reading them as root would tell")
    if not cdi.specs:
        return CDI_SPEC_CHECK.not_applicable(
            "no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi: no container here gets its GPUs by CDI",
            evidence=cdi.refs,
        )
    loaded = kernel_version(facts.proc_version)[0] or facts.module_version
    for spec in cdi.specs:
        lacks = _lacks(facts, spec)
        if spec.missing or lacks:
            return _stale(facts, cdi, spec, loaded, lacks)
    shown = "; ".join(f"{s.path}: {len(s.nodes)} device nodes, {len(s.host_paths)} host paths" for s in cdi.specs)
    unchecked = sum(s.unchecked for s in cdi.specs)
    left = (f"; {unchecked} more paths not asked" if unchecked else "") + "".join(f"; {u}" for u in cdi.unread)
    return CDI_SPEC_CHECK.ok(
        f"{shown}, all present (driver {loaded or 'unread'}){left}",
        expected="every path of the spec present on the host",
        explanation=WHY,
        evidence=cdi.refs,
    )
