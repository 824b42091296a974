"""driver.fabricmanager_version: the NVIDIA Fabric Manager's version against the driver's (NVSwitch systems)."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.investigators.driver import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Edge, Finding, Fix

DPKG_FM = ("dpkg-query", "-W", "nvidia-fabricmanager*")
FM_LOG = "/var/log/fabricmanager.log"
_LOG_VERSION = r"(?i)Fabric\s*Manager\s+version(?:\s+is)?\s*:?\s*(\d+\.\d+(?:\.\d+)?)"
_LOG_TAIL = 200_000


class FabricVersion(Record):
    packages: CommandResult
    log: str | None
    log_error: str | None

    @property
    def package_versions(self) -> dict[str, str]:
        """package -> upstream version (``580.95.05`` of ``580.95.05-1``) of installed fabric manager packages."""
        out = {}
        if self.packages.error is None:
            for line in self.packages.stdout.splitlines():
                name, _, version = line.partition("\t")
                if name.strip() and (match := re.match(r"(?:\d+:)?(\d+\.\d+(?:\.\d+)?)", version.strip())):
                    out[name.strip()] = match.group(1)
        return out

    @property
    def log_version(self) -> str | None:
        found = re.findall(_LOG_VERSION, (self.log or "")[-_LOG_TAIL:])
        return found[-1] if found else None


async def collect_fabric_version(probe: Probe) -> FabricVersion:
    log = await probe.read(FM_LOG)
    packages = await probe.run(DPKG_FM)
    return FabricVersion(packages, log.text(), log.error)


FABRICMANAGER_VERSION_CHECK = Check(
    "driver.fabricmanager_version",
    "Fabric Manager version vs the driver",
    reads="`dpkg-query -W nvidia-fabricmanager*`, `/var/log/fabricmanager.log`, driver version (NVSwitch systems only)",
    problem="the fabric manager's version differs from the driver's (it refuses to start; no NVLink fabric)",
    fix="install the fabric manager of exactly the driver's version, restart it with the GPUs idle",
    kinds=("restart",),
    premises=(premises.NVLINK, premises.DRIVER),
)


def judge_fabricmanager_version(
    platform: Platform,
    switches: str | None,
    driver: str | None,
    fm: FabricVersion | None,
    installed: str | None = None,
    *,
    down: bool = False,
    rack: bool = False,
    operator: bool = False,
) -> Finding:
    """``switches`` describes the NVSwitches found (None: no NVSwitch system); ``down``: the fabric manager is not
    active, so a mismatch is the outage driver.fabricmanager reports (critical there and here), not one to come;
    ``rack``: a multi-node NVLink rack's compute tray, whose fabric manager runs on the switch trays; ``operator``: the GPU
    Operator's driver container runs the driver and its fabric manager, one image of one version."""
    refs = (command_ref(DPKG_FM), file_ref(FM_LOG))
    if switches is None or fm is None:
        return FABRICMANAGER_VERSION_CHECK.not_applicable("no NVSwitch: no fabric manager to match with the driver")
    if rack and not fm.package_versions:
        why = "a multi-node NVLink rack's compute tray: the fabric manager runs on the rack's NVLink switch trays "
        return FABRICMANAGER_VERSION_CHECK.not_applicable(
            why + "(NVOS), none on this tray to match with its driver", evidence=refs
        )
    if operator and not fm.package_versions:
        why = "the GPU Operator's driver container runs the driver and the fabric manager of the same release (one image); "
        why += "none is installed on the host to match"
        return FABRICMANAGER_VERSION_CHECK.not_applicable(why, evidence=refs)
    versions = dict(fm.package_versions)
    if (logged := fm.log_version) is not None:
        versions[f"running (per {FM_LOG})"] = logged
    if driver is None:
        return FABRICMANAGER_VERSION_CHECK.unknown("the driver version is unknown", evidence=refs)
    if not versions:
        why = f"{switches}; fabric manager version not found (dpkg-query: {fm.packages.error or 'no package'}, {FM_LOG}: "
        why += f"{fm.log_error or 'no version line'})"
        if platform.in_container:
            why += "; the fabric manager is the container's host's: compare its version with the driver there"
        return FABRICMANAGER_VERSION_CHECK.unknown(why, evidence=refs)
    if installed is not None and installed != driver:  # an upgrade waits for its reboot: match what will load
        return _upgrade_pending(platform, fm, driver, installed, refs)
    shown = "; ".join(f"{name} {v}" for name, v in versions.items())
    wrong = {name: v for name, v in versions.items() if v != driver}
    if not wrong:
        return FABRICMANAGER_VERSION_CHECK.ok(f"driver {driver}; {shown}", expected=f"fabric manager {driver}", evidence=refs)
    return FABRICMANAGER_VERSION_CHECK.problem_at(
        "critical" if down else "high",
        f"driver {driver}; {shown}" + ("; the fabric manager is down: it refused this driver" if down else ""),
        f"fabric manager {driver}",
        "The fabric manager must be exactly the driver's version: a mismatched one refuses to start (or stops at the "
        "next restart, typically after a driver upgrade), the NVSwitch fabric is not programmed, and CUDA fails or "
        "hangs on these GPUs with no NVLink between them.",
        _install_fm(
            platform,
            driver,
            f"Install the fabric manager of exactly the driver's version ({driver}) and restart it with the GPUs idle",
        ),
        subjects=tuple(wrong),
        evidence=refs,
    )


def _install_fm(platform: Platform, version: str, summary: str, *, when: str = "", edges: tuple[Edge, ...] = ()) -> Fix:
    """Install the fabric manager package of exactly ``version`` and restart it; ``when``: what comes first."""
    return Fix(
        kind="restart",
        where=layer_where(platform, "gpu_driver"),
        summary=summary,
        actions=(
            CommandAction(
                description=f"{when}install nvidia-fabricmanager {version} (same branch package as the driver, e.g. "
                f"nvidia-fabricmanager-{version.split('.', maxsplit=1)[0]}={version}-1) and hold both packages together"
            ),
            CommandAction(description="with the server stopped", argv=("systemctl", "restart", "nvidia-fabricmanager")),
        ),
        risk="medium",
        verify="systemctl is-active nvidia-fabricmanager -> active; nvidia-smi -q | grep -A2 Fabric -> State: Completed",
        revert="reinstall the previous fabric manager package and restart it",
        persist="apt-mark hold the driver and fabric manager packages so they upgrade together",
        edges=edges,
    )


def _upgrade_pending(platform: Platform, fm: FabricVersion, loaded: str, installed: str, refs: tuple[str, ...]) -> Finding:
    """A driver upgrade waits for its reboot: the fabric manager installed must be the upgraded driver's version."""
    if not fm.package_versions:
        why = f"a driver upgrade to {installed} waits for a reboot (loaded {loaded}) and the installed fabric manager "
        why += f"package is not readable (dpkg-query: {fm.packages.error or 'no package'}): it must be {installed}"
        return FABRICMANAGER_VERSION_CHECK.unknown(why, evidence=refs)
    if set(fm.package_versions.values()) != {installed}:
        return _stale(platform, loaded, installed, fm.package_versions, refs)
    return FABRICMANAGER_VERSION_CHECK.ok(
        f"loaded driver {loaded}; fabric manager {installed}, the installed driver's version: they meet at the "
        "pending reboot (see driver.library_mismatch)",
        expected="the fabric manager of the driver's version",
        evidence=refs,
    )


def _stale(platform: Platform, loaded: str, installed: str, packages: dict[str, str], refs: tuple[str, ...]) -> Finding:
    """A driver upgrade waits for its reboot and the fabric manager is not the upgraded driver's version: matching
    it to the loaded (stale) module would break the fabric at that reboot. The reboot comes first, then the fabric
    manager of the version that loads."""
    shown = "; ".join(f"{name} {v}" for name, v in packages.items())
    fix = _install_fm(
        platform,
        installed,
        f"After the reboot into the upgraded driver ({installed}), install the fabric manager of exactly that "
        "version and restart it (not the loaded module's: it is replaced at that reboot)",
        when="after the reboot: ",
        edges=(
            Edge(
                kind="not_before",
                fact="driver.reloaded",
                why=f"the {installed} module must be loaded first: a fabric manager matched to the {loaded} module now "
                "refuses to start after that reboot",
            ),
        ),
    )
    return FABRICMANAGER_VERSION_CHECK.problem_at(
        "high",
        f"loaded module {loaded}, installed driver {installed} (a reboot is pending); {shown}",
        f"fabric manager {installed}, the driver that loads at the pending reboot",
        "The fabric manager must be exactly the driver's version. A driver upgrade waits for its reboot here: the "
        f"version to match is the one that will load ({installed}), not the {loaded} module still loaded; a fabric "
        "manager matched to the old module stops the NVSwitch fabric at that reboot.",
        fix,
        subjects=tuple(packages),
        evidence=refs,
    )
