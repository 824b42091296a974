"""power facts, CPU side: cpufreq policies, EPP, boost, CPU identity and idle states; plus the helpers the CPU
power rules share."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rigaudit.agents.check import Check
from rigaudit.agents.facts.boot_line import BootLine, collect_boot_line
from rigaudit.agents.facts.cpu_pcie import cpu_identity
from rigaudit.agents.facts.cpufreq_drivers import FrequencyDrivers, collect_frequency_drivers
from rigaudit.agents.facts.cpulist import cpu_ranges, parse_cpulist
from rigaudit.agents.facts.os_image import OsImage
from rigaudit.agents.facts.platform import Platform, detect_platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.processes import find_servers
from rigaudit.agents.facts.tuned import TunedState, collect_tuned
from rigaudit.agents.persist import boot_script_persist
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, dir_ref
from rigaudit.tools.schema.finding import Area, Finding, Where

AREA: Area = "power"
CPU = "/sys/devices/system/cpu"
CSTATE_LIMIT_US = 10
EPP_DRIVERS = ("amd-pstate-epp", "intel_pstate")
BOOST = f"{CPU}/cpufreq/boost"
NO_TURBO = f"{CPU}/intel_pstate/no_turbo"
AMD_PSTATE_STATUS = f"{CPU}/amd_pstate/status"
GUEST_NO_CPUFREQ = "no cpufreq in this guest; check on the hypervisor"
CONTAINER_NO_CPUFREQ = "no cpufreq in the kernel this container shares with its host; check on the container's host"
_MAX_REFS = 8


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _strip(text: str | None) -> str | None:
    return text.strip() if text is not None else None


def cap(refs: Sequence[str]) -> tuple[str, ...]:
    """The first few evidence refs: one per CPU (or per GPU, :mod:`.gpu`) would flood the finding."""
    return tuple(refs[:_MAX_REFS])


def cpu_where(platform: Platform) -> Where:
    """CPU knobs seen in this kernel's sysfs: the container's host from inside a container."""
    return layer_where(platform, "kernel")


def by_value(values: dict[int, str | None]) -> dict[str, list[int]]:
    """CPUs grouped by their value of one setting (``<unreadable>`` for the ones that gave none)."""
    groups: dict[str, list[int]] = {}
    for cpu, value in sorted(values.items()):
        groups.setdefault(value if value is not None else "<unreadable>", []).append(cpu)
    return groups


def describe(groups: dict[str, list[int]]) -> str:
    """``value on 0-63; other on 64-127`` for grouped CPUs."""
    return "; ".join(f"{value} on {cpu_ranges(cpus)}" for value, cpus in sorted(groups.items()))


def oneshot_unit(name: str, script: str, image: OsImage | None = None) -> str:
    """Shell lines that install and enable a oneshot systemd unit running ``script`` at boot; on an image-based OS,
    that OS's way to write the same files at boot."""
    return boot_script_persist(name, script, image) or (
        f"cat > /etc/systemd/system/{name}.service <<'EOF'\n[Unit]\nDescription={name} (rigaudit)\n"
        f"[Service]\nType=oneshot\nExecStart=/bin/sh -c '{script}'\n[Install]\nWantedBy=multi-user.target\nEOF\n"
        f"systemctl daemon-reload && systemctl enable {name}.service"
    )


class IdleState(Record):
    cpu: int
    index: int
    name: str | None
    latency_us: int | None
    disabled: bool | None

    @property
    def path(self) -> str:
        return f"{CPU}/cpu{self.cpu}/cpuidle/state{self.index}"


class CpuPowerFacts(Record):
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
    drivers: FrequencyDrivers
    boot: BootLine
    servers: tuple[tuple[str, ...], ...] = ()
    """Command lines of the inference servers seen."""
    tuned: str | None = None
    """tuned's active profile (``/etc/tuned/active_profile``)."""
    tuned_state: TunedState | None = None
    """tuned's service state and the settings its active profile applies (None: no profile selected)."""
    cpuinfo_read: bool = True
    """``/proc/cpuinfo`` was read (an Arm CPU's has no ``vendor_id``): the premise ``cpu``."""


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
    tuned = await collect_tuned(probe)
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
    vendor, family, model = cpu_identity(cpuinfo)
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
        drivers=await collect_frequency_drivers(probe),
        boot=await collect_boot_line(probe),
        servers=tuple(s.argv for s in (await find_servers(probe)).servers),
        tuned=tuned.active if tuned is not None else None,
        tuned_state=tuned,
        cpuinfo_read=cpuinfo is not None,
    )


def no_cpufreq(check: Check, facts: CpuPowerFacts) -> Finding:
    """The finding of a cpufreq check on a host without cpufreq (no CPUs, a guest, or no driver)."""
    ref = (f"exists:{CPU}/cpu{facts.cpus[0]}/cpufreq",) if facts.cpus else (dir_ref(CPU),)
    if not facts.cpus:
        return check.unknown(f"no CPUs listed under {CPU}", evidence=(dir_ref(CPU),))
    if facts.platform.in_vm:
        return check.unknown(GUEST_NO_CPUFREQ, evidence=(*ref, *facts.platform.evidence))
    if facts.platform.in_container:
        return check.unknown(CONTAINER_NO_CPUFREQ, evidence=(*ref, *facts.platform.evidence))
    why = f"{CPU}/cpu{facts.cpus[0]}/cpufreq is absent: no cpufreq driver is loaded (P-states under firmware control?)"
    return check.unknown(why, evidence=ref)
