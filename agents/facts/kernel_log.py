"""The kernel log (``dmesg``): read once per audit, and the words for when it cannot be read."""

from __future__ import annotations

from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.probe import Probe, command_ref

DMESG = ("dmesg",)
DMESG_REF = command_ref(DMESG)


async def read_kernel_log(probe: Probe) -> CommandResult:
    return await probe.run(DMESG)


def log_unavailable(cmd: CommandResult, *, in_container: bool = False) -> str | None:
    """Why the kernel log gave nothing to judge, or None when its text can be used."""
    why = _why(cmd, in_container)
    if why and in_container and cmd.error != "not_recorded":
        why += "; the kernel log is the container's host's: read it there (dmesg on the node)"
    return why


def _why(cmd: CommandResult, in_container: bool) -> str | None:
    if cmd.error == "not_recorded":
        return "the kernel log (dmesg) is not recorded in this snapshot"
    if cmd.error == "denied":
        return f"dmesg refused: {cmd.stderr.strip() or 'by policy'}"
    if cmd.error == "not_found":
        return "dmesg is not installed"
    if cmd.error:
        return f"dmesg failed: {cmd.error}"
    if cmd.exit_code != 0:
        reason = (cmd.stderr.strip().splitlines() or [f"exit status {cmd.exit_code}"])[0]
        # a container's root has no CAP_SYSLOG in the host's user namespace (Docker and Podman drop it; a rootless
        # container's root is a user of the host): running as root there does not help
        need = "CAP_SYSLOG, which a container's root lacks" if in_container else "run as root"
        hint = f" (kernel.dmesg_restrict=1: {need})" if "not permitted" in reason.lower() else ""
        return f"dmesg not permitted: {reason}{hint}" if hint else f"dmesg failed: {reason}"
    return None
