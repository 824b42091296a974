"""Power, CPU side: frequency scaling (governor, driver, EPP, boost) and idle states."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.facts.cpulist import cpu_ranges, parse_cpulist
from agents.facts.platform import Platform, detect_platform
from agents.findings import not_applicable, ok, problem, unknown
from tools.model.finding import (
    Action,
    Area,
    CommandAction,
    Finding,
    Fix,
    Severity,
    SysfsWriteAction,
    Where,
)
from tools.probe import Probe, dir_ref, file_ref

AREA: Area = "power"
CPU = "/sys/devices/system/cpu"
CSTATE_LIMIT_US = 10
EPP_DRIVERS = ("amd-pstate-epp", "intel_pstate")
BOOST = f"{CPU}/cpufreq/boost"
NO_TURBO = f"{CPU}/intel_pstate/no_turbo"
AMD_PSTATE_STATUS = f"{CPU}/amd_pstate/status"
GUEST_NO_CPUFREQ = "no cpufreq in this guest; check on the hypervisor"
_MAX_REFS = 8


# -- small helpers ---------------------------------------------------------------------------


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _strip(text: str | None) -> str | None:
    return text.strip() if text is not None else None


def _cap(refs: Sequence[str]) -> tuple[str, ...]:
    return tuple(refs[:_MAX_REFS])


def _where(platform: Platform) -> Where:
    """CPU knobs inside an LXC/docker container belong to the host kernel: the hypervisor."""
    return "hypervisor" if platform.in_container else "host"


def _by_value(values: dict[int, str | None]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for cpu, value in sorted(values.items()):
        groups.setdefault(value if value is not None else "<unreadable>", []).append(cpu)
    return groups


def _describe(groups: dict[str, list[int]]) -> str:
    return "; ".join(f"{value} on {cpu_ranges(cpus)}" for value, cpus in sorted(groups.items()))


def _unit(name: str, script: str) -> str:
    return (
        f"cat > /etc/systemd/system/{name}.service <<'EOF'\n[Unit]\nDescription={name} (rigaudit)\n"
        f"[Service]\nType=oneshot\nExecStart=/bin/sh -c '{script}'\n[Install]\nWantedBy=multi-user.target\nEOF\n"
        f"systemctl daemon-reload && systemctl enable {name}.service"
    )


# -- facts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdleState:
    cpu: int
    index: int
    name: str | None
    latency_us: int | None
    disabled: bool | None

    @property
    def path(self) -> str:
        return f"{CPU}/cpu{self.cpu}/cpuidle/state{self.index}"


@dataclass(frozen=True)
class CpuPowerFacts:
    platform: Platform
    cpus: tuple[int, ...]
    cpufreq_present: bool
    driver: str | None
    governors: dict[int, str | None]
    epp: dict[int, str | None]
    boost: str | None
    no_turbo: str | None
    amd_pstate_status: str | None
    has_cppc: bool
    vendor: str | None
    family: int | None
    model: int | None
    cmdline: str | None
    cpuidle_driver: str | None
    idle: tuple[IdleState, ...]


def _cpu_identity(cpuinfo: str | None) -> tuple[str | None, int | None, int | None]:
    if cpuinfo is None:
        return None, None, None
    first = cpuinfo.split("\n\n", 1)[0]
    fields = dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in first.splitlines()))
    return fields.get("vendor_id"), _int(fields.get("cpu family")), _int(fields.get("model"))


async def _cpus(probe: Probe) -> tuple[int, ...]:
    listing = await probe.list_dir(CPU)
    present = sorted(int(m.group(1)) for e in listing.entries or () if (m := re.fullmatch(r"cpu(\d+)", e)))
    online = parse_cpulist(await probe.text(f"{CPU}/online"))
    return tuple(c for c in present if online is None or c in online)


async def _idle_states(probe: Probe, cpus: Sequence[int]) -> tuple[IdleState, ...]:
    """Exit latency of every state on every CPU; name and disable flag only for the deep ones."""
    listings = await probe.gather(*[lambda c=c: probe.list_dir(f"{CPU}/cpu{c}/cpuidle") for c in cpus])
    slots = [
        (cpu, int(m.group(1)))
        for cpu, listing in zip(cpus, listings, strict=True)
        for m in (re.fullmatch(r"state(\d+)", e) for e in listing.entries or ())
        if m
    ]
    base = [f"{CPU}/cpu{cpu}/cpuidle/state{k}" for cpu, k in slots]
    latencies = [_int(t) for t in await probe.gather(*[lambda p=p: probe.text(f"{p}/latency") for p in base])]
    deep = [p for p, lat in zip(base, latencies, strict=True) if lat is not None and lat > CSTATE_LIMIT_US]
    texts = await probe.gather(*[lambda p=p, f=f: probe.text(f"{p}/{f}") for p in deep for f in ("name", "disable")])
    details = {p: (_strip(texts[2 * i]), _int(texts[2 * i + 1])) for i, p in enumerate(deep)}
    states = []
    for (cpu, k), path, latency in zip(slots, base, latencies, strict=True):
        name, flag = details.get(path, (None, None))
        states.append(IdleState(cpu, k, name, latency, None if flag is None else flag != 0))
    return tuple(states)


async def collect_cpu(probe: Probe) -> CpuPowerFacts:
    cpus = await _cpus(probe)
    cpu0 = f"{CPU}/cpu{cpus[0] if cpus else 0}"
    cpufreq_present, has_cppc = await probe.gather(
        lambda: probe.exists(f"{cpu0}/cpufreq"), lambda: probe.exists(f"{cpu0}/acpi_cppc")
    )
    paths = ("/proc/cpuinfo", f"{cpu0}/cpufreq/scaling_driver", BOOST, NO_TURBO, AMD_PSTATE_STATUS, "/proc/cmdline")
    cpuinfo, driver, boost, no_turbo, status, cmdline = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    idle_driver = await probe.text(f"{CPU}/cpuidle/current_driver")
    cpufreq_present = cpufreq_present and bool(cpus)
    governors: dict[int, str | None] = {}
    epp: dict[int, str | None] = {}
    driver_name = _strip(driver)
    if cpufreq_present:
        texts = await probe.gather(*[lambda c=c: probe.text(f"{CPU}/cpu{c}/cpufreq/scaling_governor") for c in cpus])
        governors = {c: _strip(t) for c, t in zip(cpus, texts, strict=True)}
        if driver_name in EPP_DRIVERS:
            texts = await probe.gather(
                *[lambda c=c: probe.text(f"{CPU}/cpu{c}/cpufreq/energy_performance_preference") for c in cpus]
            )
            epp = {c: _strip(t) for c, t in zip(cpus, texts, strict=True)}
    idle = await _idle_states(probe, cpus)
    vendor, family, model = _cpu_identity(cpuinfo)
    platform = await detect_platform(probe)
    return CpuPowerFacts(
        platform=platform,
        cpus=cpus,
        cpufreq_present=cpufreq_present,
        driver=driver_name,
        governors=governors,
        epp=epp,
        boost=_strip(boost),
        no_turbo=_strip(no_turbo),
        amd_pstate_status=_strip(status),
        has_cppc=has_cppc,
        vendor=vendor,
        family=family,
        model=model,
        cmdline=cmdline,
        cpuidle_driver=_strip(idle_driver),
        idle=idle,
    )


# -- judges ----------------------------------------------------------------------------------


def _no_cpufreq(check: str, title: str, facts: CpuPowerFacts) -> Finding:
    ref = (f"exists:{CPU}/cpu{facts.cpus[0]}/cpufreq",) if facts.cpus else (dir_ref(CPU),)
    if not facts.cpus:
        return unknown(check, AREA, title, f"no CPUs listed under {CPU}", evidence=(dir_ref(CPU),))
    if facts.platform.is_guest:
        return unknown(check, AREA, title, GUEST_NO_CPUFREQ, evidence=(*ref, *facts.platform.evidence))
    why = f"{CPU}/cpu{facts.cpus[0]}/cpufreq is absent: no cpufreq driver is loaded (P-states under firmware control?)"
    return unknown(check, AREA, title, why, evidence=ref)


def judge_governor(facts: CpuPowerFacts) -> Finding:
    check, title = "power.governor", "CPU frequency governor"
    if not facts.cpufreq_present:
        return _no_cpufreq(check, title, facts)
    refs = [file_ref(f"{CPU}/cpu{c}/cpufreq/scaling_governor") for c in facts.governors]
    groups = _by_value(facts.governors)
    bad = {v: cpus for v, cpus in groups.items() if v != "performance"}
    if not bad:
        return ok(
            check, AREA, title, f"performance on {cpu_ranges(facts.governors)}", expected="performance", evidence=_cap(refs)
        )
    if set(bad) == {"<unreadable>"}:
        return unknown(
            check, AREA, title, f"scaling_governor not readable on {cpu_ranges(bad['<unreadable>'])}", evidence=_cap(refs)
        )
    offenders = sorted(c for cpus in bad.values() for c in cpus)
    paths = tuple(f"{CPU}/cpu{c}/cpufreq/scaling_governor" for c in facts.governors)
    active_epp = facts.driver in EPP_DRIVERS and set(bad) <= {"powersave", "<unreadable>"}
    severity: Severity = "low" if active_epp else "medium"
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary=f"Set the performance governor on every CPU ({len(paths)} cpufreq policies)",
        actions=(SysfsWriteAction(paths=paths, value="performance"),),
        risk="low",
        verify=f"cat {CPU}/cpu*/cpufreq/scaling_governor | sort | uniq -c  -> only 'performance'",
        revert="write the previous governor back to each CPU's scaling_governor: " + _describe(bad),
        persist=_unit(
            "rigaudit-cpu-governor",
            f"for f in {CPU}/cpu[0-9]*/cpufreq/scaling_governor; do echo performance > $f; done",
        ),
    )
    explanation = (
        "The governor decides how fast a core ramps up when the inference server's CPU threads wake (scheduler loop, "
        "sampling, kernel launches, NCCL proxy threads). Demand-based governors (schedutil, ondemand, powersave) react to "
        "load after the fact, so the bursty, short CPU phases between decode steps run partly at low clocks; this shows up "
        "as TPOT jitter and a few percent lower single-stream decode speed. "
        + (
            f"Under {facts.driver} the 'powersave' governor with EPP=performance is close to 'performance'; see power.epp. "
            if active_epp
            else ""
        )
        + "Idle power rises only slightly: idle cores still enter C-states."
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        _describe(bad),
        "performance on every CPU",
        explanation,
        fix,
        subjects=(cpu_ranges(offenders),),
        evidence=_cap([file_ref(f"{CPU}/cpu{c}/cpufreq/scaling_governor") for c in offenders]),
    )


def _boot_line_actions(param: str, cmdline: str | None) -> tuple[Action, ...]:
    grub = (
        CommandAction(
            description=f"GRUB (BOOT_IMAGE= in /proc/cmdline): append {param} to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub",
            argv=(
                "sed",
                "-i",
                rf's/^GRUB_CMDLINE_LINUX_DEFAULT="\(.*\)"/GRUB_CMDLINE_LINUX_DEFAULT="\1 {param}"/',
                "/etc/default/grub",
            ),
        ),
        CommandAction(
            description="GRUB: regenerate the boot config (Proxmox: proxmox-boot-tool refresh also syncs every ESP; "
            "plain Debian: update-grub)",
            argv=("proxmox-boot-tool", "refresh"),
        ),
    )
    sdboot = (
        CommandAction(
            description=f"systemd-boot (Proxmox ZFS/UEFI via proxmox-boot-tool): /etc/kernel/cmdline is one line; append {param}",
            argv=("sed", "-i", f"1s/$/ {param}/", "/etc/kernel/cmdline"),
        ),
        CommandAction(description="systemd-boot: copy the new command line to every ESP", argv=("proxmox-boot-tool", "refresh")),
    )
    head = (
        CommandAction(
            description="See which boot loader this host uses (GRUB or systemd-boot)", argv=("proxmox-boot-tool", "status")
        ),
    )
    tail = (CommandAction(description=f"Reboot, then check that {param} is in /proc/cmdline", argv=("systemctl", "reboot")),)
    if cmdline is not None and "BOOT_IMAGE=" in cmdline:
        return head + grub + tail
    if cmdline is not None and "initrd=" in cmdline:
        return head + sdboot + tail
    return head + grub + sdboot + tail


def judge_scaling_driver(facts: CpuPowerFacts) -> Finding:
    check, title = "power.scaling_driver", "CPU frequency scaling driver"
    if not facts.cpufreq_present:
        return _no_cpufreq(check, title, facts)
    cpu0 = facts.cpus[0]
    refs = (file_ref(f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver"), "file:/proc/cpuinfo", f"exists:{CPU}/cpu{cpu0}/acpi_cppc")
    if facts.driver is None:
        return unknown(check, AREA, title, f"{CPU}/cpu{cpu0}/cpufreq/scaling_driver is not readable", evidence=refs[:1])
    amd = facts.vendor == "AuthenticAMD" and facts.family is not None and facts.family >= 0x17
    intel = facts.vendor == "GenuineIntel"
    if amd and facts.driver == "acpi-cpufreq" and facts.has_cppc:
        return _amd_pstate_problem(facts, refs)
    if amd and facts.driver == "acpi-cpufreq":
        why = "no acpi_cppc: amd_pstate needs CPPC, which the BIOS does not expose (see firmware.cppc)"
        return ok(check, AREA, title, f"acpi-cpufreq ({why})", expected="amd-pstate-epp", evidence=refs)
    if intel and facts.driver == "acpi-cpufreq":
        disabled = facts.cmdline is not None and "intel_pstate=disable" in facts.cmdline
        fix = Fix(
            kind="reboot",
            where=_where(facts.platform),
            summary="Let intel_pstate drive the CPU: drop intel_pstate=disable from the boot line"
            if disabled
            else "Let intel_pstate drive the CPU: enable HWP ('Hardware P-States: Native') in the BIOS",
            actions=(
                CommandAction(
                    description="Remove intel_pstate=disable from /etc/default/grub or /etc/kernel/cmdline, then "
                    "proxmox-boot-tool refresh (or update-grub) and reboot"
                    if disabled
                    else "BIOS: Hardware P-States = Native (HWP), then reboot"
                ),
            ),
            verify=f"cat {CPU}/cpu0/cpufreq/scaling_driver  -> intel_pstate",
            revert="restore the previous boot line / BIOS setting and reboot",
        )
        return problem(
            check,
            AREA,
            title,
            "low",
            "acpi-cpufreq on an Intel CPU" + (" (intel_pstate=disable on the boot line)" if disabled else ""),
            "intel_pstate",
            "intel_pstate with HWP lets the core pick its frequency within microseconds and exposes EPP; acpi-cpufreq "
            "only switches between a few ACPI P-states at the governor's pace. The gain for inference is small "
            "(ramp latency on the CPU threads that drive the GPUs).",
            fix,
            subjects=(cpu_ranges(facts.cpus),),
            evidence=(*refs[:2], "file:/proc/cmdline"),
        )
    return ok(check, AREA, title, facts.driver, evidence=refs[:2])


def _amd_pstate_problem(facts: CpuPowerFacts, refs: tuple[str, ...]) -> Finding:
    param = "amd_pstate=active"
    where = _where(facts.platform)
    status_ref = file_ref(AMD_PSTATE_STATUS)
    persist = f"add {param} to the kernel command line (/etc/default/grub or /etc/kernel/cmdline, then proxmox-boot-tool refresh)"
    if facts.amd_pstate_status is not None:
        fix = Fix(
            kind="runtime",
            where=where,
            summary=f"Switch to amd-pstate in active (EPP) mode now via {AMD_PSTATE_STATUS}; persist {param} on the boot line",
            actions=(SysfsWriteAction(paths=(AMD_PSTATE_STATUS,), value="active"),),
            risk="medium",
            verify=f"cat {CPU}/cpu0/cpufreq/scaling_driver  -> amd-pstate-epp",
            revert=f"echo {facts.amd_pstate_status} > {AMD_PSTATE_STATUS}",
            persist=persist,
        )
        runtime_note = f"{AMD_PSTATE_STATUS} exists ({facts.amd_pstate_status}), so the switch can be made at runtime."
    else:
        fix = Fix(
            kind="reboot",
            where=where,
            summary=f"Add {param} to the kernel command line and reboot",
            actions=_boot_line_actions(param, facts.cmdline),
            risk="low",
            verify=f"grep -o {param} /proc/cmdline; cat {CPU}/cpu0/cpufreq/scaling_driver  -> amd-pstate-epp; "
            f"cat {AMD_PSTATE_STATUS}  -> active",
            revert=f"remove {param} from the same file, proxmox-boot-tool refresh (or update-grub), reboot",
            persist="the boot line is persistent by itself",
        )
        runtime_note = (
            f"A runtime switch is possible only when {AMD_PSTATE_STATUS} exists; it is absent here (the driver did not "
            "register at boot), so this needs the boot option and a reboot."
        )
    explanation = (
        "This AMD Zen 2+ CPU exposes ACPI CPPC, but the kernel runs the legacy acpi-cpufreq driver, which only knows "
        "a handful of ACPI P-states and leaves boost decisions coarse. amd-pstate in active mode hands frequency selection "
        "to the CPU's own firmware through CPPC (continuous performance levels, per-core decisions in well under a "
        "millisecond, EPP hints, preferred-core ranking on recent kernels), so the bursty CPU work of an inference "
        "server (scheduler step, sampling, kernel launches, NCCL proxy threads) runs at full clock sooner. Expect a "
        "small to moderate gain in single-stream decode latency; measure before and after. On EPYC servers the kernel "
        "does not pick amd-pstate on its own, so it must be asked for on the command line. "
        + runtime_note
        + " After the switch, keep governor 'performance' (or EPP 'performance'); see power.epp."
    )
    return problem(
        "power.scaling_driver",
        AREA,
        "CPU frequency scaling driver",
        "medium",
        f"scaling_driver acpi-cpufreq on AMD family 0x{facts.family or 0:x} with acpi_cppc present",
        "amd-pstate-epp (amd_pstate=active)",
        explanation,
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(*refs, status_ref, "file:/proc/cmdline"),
    )


def judge_epp(facts: CpuPowerFacts) -> Finding:
    check, title = "power.epp", "CPU energy-performance preference"
    if not facts.cpufreq_present:
        return _no_cpufreq(check, title, facts)
    if facts.driver not in EPP_DRIVERS:
        why = (
            f"{facts.driver or 'this driver'} has no energy_performance_preference "
            "(EPP exists under amd-pstate-epp and intel_pstate)"
        )
        return not_applicable(check, AREA, title, why, evidence=(file_ref(f"{CPU}/cpu{facts.cpus[0]}/cpufreq/scaling_driver"),))
    paths = {c: f"{CPU}/cpu{c}/cpufreq/energy_performance_preference" for c in facts.epp}
    groups = _by_value(facts.epp)
    bad = {v: cpus for v, cpus in groups.items() if v != "performance"}
    if not bad:
        return ok(
            check, AREA, title, f"performance on {cpu_ranges(facts.epp)}", evidence=_cap([file_ref(p) for p in paths.values()])
        )
    if set(bad) == {"<unreadable>"}:
        why = f"energy_performance_preference not readable on {cpu_ranges(bad['<unreadable>'])}"
        return unknown(check, AREA, title, why, evidence=_cap([file_ref(p) for p in paths.values()]))
    offenders = sorted(c for cpus in bad.values() for c in cpus)
    severity: Severity = "medium" if set(bad) & {"power", "balance_power"} else "low"
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary="Set energy_performance_preference to performance on every CPU",
        actions=(SysfsWriteAction(paths=tuple(paths[c] for c in offenders), value="performance"),),
        risk="low",
        verify=f"cat {CPU}/cpu*/cpufreq/energy_performance_preference | sort | uniq -c  -> only 'performance'",
        revert="write the previous values back: " + _describe(bad),
        persist=_unit(
            "rigaudit-cpu-epp",
            f"for f in {CPU}/cpu[0-9]*/cpufreq/energy_performance_preference; do echo performance > $f; done",
        ),
    )
    explanation = (
        f"Under {facts.driver} the CPU picks its own clocks; EPP is the hint that biases it between saving energy and "
        "ramping fast. Anything but 'performance' delays ramp-up on the short CPU bursts between decode steps. "
        "With governor 'performance' the kernel pins EPP to performance and refuses other values (EBUSY)."
    )
    return problem(
        check,
        AREA,
        title,
        severity,
        _describe(bad),
        "performance on every CPU",
        explanation,
        fix,
        subjects=(cpu_ranges(offenders),),
        evidence=_cap([file_ref(paths[c]) for c in offenders]),
    )


def judge_boost(facts: CpuPowerFacts) -> Finding:
    check, title = "power.boost", "CPU boost / turbo"
    if facts.boost is not None:
        path, value, want, on = BOOST, facts.boost, "1", facts.boost == "1"
    elif facts.no_turbo is not None:
        path, value, want, on = NO_TURBO, facts.no_turbo, "0", facts.no_turbo == "0"
    elif not facts.cpufreq_present:
        return _no_cpufreq(check, title, facts)
    else:
        why = f"neither {BOOST} nor {NO_TURBO} exists; boost is then set in the BIOS (Core Performance Boost / Turbo)"
        return unknown(check, AREA, title, why, evidence=(file_ref(BOOST), file_ref(NO_TURBO)))
    name = path.rsplit("/", 1)[-1]
    if on:
        return ok(check, AREA, title, f"{name}={value}", expected=f"{name}={want}", evidence=(file_ref(path),))
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary=f"Enable boost: write {want} to {path}",
        actions=(SysfsWriteAction(paths=(path,), value=want),),
        risk="low",
        verify=f"cat {path}  -> {want}",
        revert=f"echo {value} > {path}",
        persist=_unit("rigaudit-cpu-boost", f"echo {want} > {path}"),
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        f"{name}={value}",
        f"{name}={want}",
        "Boost is off, so every core is capped at its base clock (often 15-30% below the single-core boost clock). "
        "The CPU side of each decode step (Python scheduler, sampling, launches) scales with single-thread speed.",
        fix,
        subjects=(cpu_ranges(facts.cpus),),
        evidence=(file_ref(path),),
    )


def judge_cstates(facts: CpuPowerFacts) -> Finding:
    check, title = "power.cstates", "CPU idle states (C-states)"
    if not facts.idle:
        if facts.platform.is_guest:
            return unknown(
                check, AREA, title, "no cpuidle in this guest; check on the hypervisor", evidence=facts.platform.evidence
            )
        why = f"no cpuidle states under {CPU}/cpu*/cpuidle (driver: {facts.cpuidle_driver or 'unknown'})"
        return unknown(check, AREA, title, why, evidence=(file_ref(f"{CPU}/cpuidle/current_driver"),))
    readable = [s for s in facts.idle if s.latency_us is not None]
    if not readable:
        return unknown(check, AREA, title, "cpuidle state latency files are not readable")
    deep = [s for s in readable if (s.latency_us or 0) > CSTATE_LIMIT_US]
    bad = [s for s in deep if s.disabled is False]
    if not bad and any(s.disabled is None for s in deep):
        why = f"the disable flag of idle states above {CSTATE_LIMIT_US} us is not readable"
        return unknown(check, AREA, title, why, evidence=_cap([file_ref(f"{s.path}/disable") for s in deep]))
    kinds: dict[tuple[str, int], list[int]] = {}
    for s in bad or deep:
        kinds.setdefault((s.name or f"state{s.index}", s.latency_us or 0), []).append(s.cpu)
    summary = "; ".join(f"{n} ({lat} us) on {cpu_ranges(cpus)}" for (n, lat), cpus in sorted(kinds.items()))
    if not bad:
        shallow = max((s.latency_us or 0 for s in readable if s not in deep), default=0)
        observed = f"no enabled idle state above {CSTATE_LIMIT_US} us (deepest allowed: {shallow} us)"
        observed += f"; disabled: {summary}" if deep else ""
        refs = [file_ref(f"{s.path}/disable") for s in deep] or [file_ref(f"{readable[0].path}/latency")]
        return ok(check, AREA, title, observed, expected=f"no enabled state above {CSTATE_LIMIT_US} us", evidence=_cap(refs))
    paths = tuple(f"{s.path}/disable" for s in bad)
    cpus = sorted({s.cpu for s in bad})
    driver = facts.cpuidle_driver or "acpi_idle"
    boot = "intel_idle.max_cstate=1" if driver == "intel_idle" else "processor.max_cstate=1"
    fix = Fix(
        kind="runtime",
        where=_where(facts.platform),
        summary=f"Disable idle states with exit latency above {CSTATE_LIMIT_US} us on every CPU ({len(paths)} states)",
        actions=(SysfsWriteAction(paths=paths, value="1"),),
        risk="low",
        verify=f"grep . {CPU}/cpu*/cpuidle/state*/disable: each listed state reads 1; its 'usage' counter stops growing",
        revert=f"write 0 to the same {len(paths)} stateN/disable files",
        persist=_unit(
            "rigaudit-cstates",
            f"for s in {CPU}/cpu[0-9]*/cpuidle/state*; do "
            f"[ $(cat $s/latency) -gt {CSTATE_LIMIT_US} ] && echo 1 > $s/disable; done; true",
        )
        + f"\n(alternative, with a reboot: {boot} on the kernel command line; do not use idle=poll or cpuidle.off=1, "
        "which burn power on idle cores, cost boost headroom, and remove the shallow states too)",
    )
    explanation = (
        f"Deep idle states are enabled: {summary}. The inference server's threads block between "
        "decode steps (waiting on the GPU, on NCCL, on the next request); a core that dropped into a deep C-state pays "
        "its exit latency before it can launch the next kernel or answer a collective, and with tensor parallelism "
        "every step waits for the slowest rank. On latency-bound single-stream decode this is typically a few percent "
        "of TPOT plus jitter. Keeping C1 (and POLL) preserves most idle savings; idle power rises (often tens of watts "
        "per socket) and some all-core boost headroom may be lost, so measure. The menu/teo governor avoids deep "
        f"states for predicted short idles, but mispredictions hit the full exit cost. The {CPU}/cpu*/cpuidle writes "
        "take effect immediately, without a reboot."
    )
    return problem(
        check,
        AREA,
        title,
        "medium",
        summary + " (enabled)",
        f"no enabled idle state with exit latency above {CSTATE_LIMIT_US} us",
        explanation,
        fix,
        subjects=(cpu_ranges(cpus),),
        evidence=_cap([ref for s in bad for ref in (file_ref(f"{s.path}/latency"), file_ref(f"{s.path}/disable"))]),
    )
