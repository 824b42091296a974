"""driver.secure_boot: Secure Boot or lockdown keeping an unsigned NVIDIA module from loading."""

from __future__ import annotations

import re

from rigaudit.agents.check import Check
from rigaudit.agents.facts.kernel_log import DMESG_REF, log_unavailable
from rigaudit.agents.facts.nvidia_driver import MODULES
from rigaudit.agents.investigators.driver import premises
from rigaudit.agents.investigators.driver.install_facts import (
    LOCKDOWN,
    MOK_NEW,
    SECURE_BOOT,
    InstallFacts,
    host_where,
    secure_boot_state,
)
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix

_REJECTED = (
    r"(?i)"
    r"(Lockdown: .*unsigned module|Key was rejected by service|"
    r"module verification failed.*(?:rejected|denied)|nvidia\S*: .*Key was rejected)"
)
_KERNEL_REFUSED = r"Loading of (?:unsigned module|module with unavailable key|module with unsupported crypto) is rejected"
"""kernel/module/signing.c's notice: it names no module, so it counts where an NVIDIA module is the one missing."""


SECURE_BOOT_CHECK = Check(
    "driver.secure_boot",
    "Secure Boot and the NVIDIA module's signature",
    reads=(
        "EFI variable `SecureBoot-8be4df61-…`, `/sys/kernel/security/lockdown`, `/proc/modules`, kernel log (unsigned "
        "module rejected, Lockdown), shim's `MokNew` variable (a key queued for enrolment) where a module is refused"
    ),
    problem="an NVIDIA module is not loaded while Secure Boot/lockdown is on or the kernel log shows it rejected",
    fix="sign the module with an enrolled MOK (`mokutil --import`) or turn Secure Boot off; a key already queued "
    "for enrolment: the reboot that enrolls it",
    kinds=("reboot",),
    premises=(premises.PLATFORM_FIX, premises.MODULES),
)


def _boot_state(f: InstallFacts, refs: list[str]) -> tuple[bool | None, str]:
    """(Secure Boot on, its words: ``Secure Boot on, lockdown [integrity]``); a legacy BIOS boot counts as off."""
    state = secure_boot_state(f.secure_boot)
    if state is None and f.secure_boot_error == "ENOENT" and not f.efi:
        sb_text = "legacy BIOS boot (no Secure Boot)"
        state = False
    elif state is None:
        sb_text = f"Secure Boot state unreadable ({f.secure_boot_error or 'short variable'})"
    else:
        sb_text = "Secure Boot on" if state else "Secure Boot off"
    if _locked_down(f):
        sb_text += f", lockdown {f.lockdown}"
        refs.append(file_ref(LOCKDOWN))
    return state, sb_text


def _locked_down(f: InstallFacts) -> bool:
    return bool(f.lockdown) and "[none]" not in (f.lockdown or "")


def _rejections(f: InstallFacts) -> list[str]:
    """The kernel log's lines refusing an unsigned NVIDIA module (or any, under lockdown)."""
    log = f.dmesg.stdout if log_unavailable(f.dmesg) is None else ""
    rejected = [line.strip() for line in log.splitlines() if re.search(_REJECTED, line) and "nvidia" in line.lower()]
    rejected += [line.strip() for line in log.splitlines() if re.search(_KERNEL_REFUSED, line)]
    return rejected + [line.strip() for line in log.splitlines() if "Lockdown:" in line and "unsigned module" in line]


def _sign_fix(f: InstallFacts) -> Fix:
    return Fix(
        kind="reboot",
        where=host_where(f.platform),
        summary="Sign the NVIDIA modules with a Machine Owner Key and enroll it (or turn Secure Boot off in the firmware)",
        actions=(
            CommandAction(
                description="enroll the DKMS signing key (Ubuntu/Debian: /var/lib/dkms/mok.pub; set a one-time password)",
                argv=("mokutil", "--import", "/var/lib/dkms/mok.pub"),
            ),
            CommandAction(description="rebuild and sign the module for the running kernel", argv=("dkms", "autoinstall")),
            CommandAction(description="reboot and confirm the key in MokManager at the console; or disable Secure Boot in setup"),
        ),
        risk="medium",
        verify="after the reboot: grep -w nvidia /proc/modules; mokutil --sb-state; nvidia-smi lists every GPU",
        revert="mokutil --delete /var/lib/dkms/mok.pub (or re-enable Secure Boot), then reboot",
        persist="the enrolled key persists in the firmware; DKMS signs future builds with it",
    )


def _enroll_fix(f: InstallFacts) -> Fix:
    """A key is already queued for enrolment (``mokutil --list-new``): the reboot that confirms it is the fix."""
    return Fix(
        kind="reboot",
        where=host_where(f.platform),
        summary="Reboot and confirm the Machine Owner Key already queued for enrolment (mokutil --list-new shows it) "
        "in MokManager at the console: the modules are signed with it, and no new key is needed",
        actions=(
            CommandAction(description="at the console during the reboot: MokManager -> Enroll MOK -> the one-time password"),
            CommandAction(description="reboot", argv=("systemctl", "reboot")),
        ),
        risk="medium",
        verify="after the reboot: mokutil --list-new lists nothing; grep -w nvidia /proc/modules; nvidia-smi lists every GPU",
        revert="mokutil --delete the key's certificate, then reboot",
        persist="the enrolled key persists in the firmware",
    )


def judge_secure_boot(f: InstallFacts) -> Finding:
    refs = [file_ref(SECURE_BOOT), file_ref(MODULES), DMESG_REF]
    if f.origin.origin == "vfio":
        why = f"{f.origin.said}: no NVIDIA module is to load on this host; the guest's Secure Boot is the guest's"
        return SECURE_BOOT_CHECK.not_applicable(why, evidence=f.origin.evidence)
    state, sb_text = _boot_state(f, refs)
    if f.modules is None:
        return SECURE_BOOT_CHECK.unknown(f"{MODULES} not readable: {f.modules_error}", evidence=refs)
    rejected = _rejections(f)
    missing = [m for m in ("nvidia", "nvidia_uvm") if m not in f.modules]
    if "nvidia" in f.modules and not (rejected and missing):
        signed = (
            " (so it is signed with a key the firmware trusts: rebuilt modules must be signed with the same MOK)" if state else ""
        )
        return SECURE_BOOT_CHECK.ok(
            f"nvidia module loaded; {sb_text}{signed}",
            expected="the NVIDIA modules load",
            evidence=refs,
        )
    if not f.gpus and "nvidia" not in f.modules:
        return SECURE_BOOT_CHECK.not_applicable("no NVIDIA GPU on this host", evidence=refs)
    if not rejected and state is not True and not _locked_down(f):
        if state is False:
            return SECURE_BOOT_CHECK.ok(
                f"nvidia module not loaded, but {sb_text}: not the cause (see driver.dkms)",
                expected="the NVIDIA modules load",
                evidence=refs,
            )
        return SECURE_BOOT_CHECK.unknown(f"nvidia module not loaded; {sb_text}; no rejection in the kernel log", evidence=refs)
    observed = f"{', '.join(missing)} not loaded; {sb_text}"
    if rejected:
        observed += "; kernel log: " + rejected[-1][:200]
    queued = f.mok_new
    if queued:
        observed += "; a Machine Owner Key is queued for enrolment (shim's MokNew variable), not yet enrolled"
        refs.append(file_ref(MOK_NEW))
    return SECURE_BOOT_CHECK.problem_at(
        "high",
        observed,
        "the NVIDIA modules load",
        "With UEFI Secure Boot on, the kernel's lockdown refuses modules that are not signed by a trusted key: an "
        "NVIDIA module built by DKMS or the .run installer without signing never loads, so CUDA sees no GPU. The fix "
        "is to sign it with a Machine Owner Key enrolled in the firmware (needs a person at the console once), or to "
        "turn Secure Boot off where policy allows.",
        _enroll_fix(f) if queued else _sign_fix(f),
        subjects=tuple(g.label for g in f.gpus),
        evidence=refs,
    )
