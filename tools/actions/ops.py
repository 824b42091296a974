"""Reading, setting and restoring one target through a Host.

``read_value`` never raises (it returns :class:`Reading` with ``error`` set); ``set_value`` raises
:class:`ActionError` with one line when the host refuses. ``matches`` says whether a value read
back is the one wanted (whitespace-insensitive for kernel files, under the mask for registers).
"""

from __future__ import annotations

import re
import shlex
from typing import Protocol, runtime_checkable

from rigaudit.tools.actions.targets import (
    AnyTarget,
    ConfigFileTarget,
    ModuleTarget,
    PciRegisterTarget,
    ServiceTarget,
    ValueFileTarget,
)
from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host, HostWriteError
from rigaudit.tools.pci import apply_masked, register_offset

_CHOICE = re.compile(r"\[([^\]\s]+)\]")
ABSENT = None
"""The value of a configuration file that does not exist."""


class ActionError(OperationError):
    """A target could not be read, set or restored; the message says which and why."""


CHANGE_FAILED = (ActionError, HostWriteError)
"""What a refused change raises: ours, or the host's own write error (its message says which path and why)."""


class Reading(Record):
    value: str | None
    """The current value (``None`` for an absent config file, or when ``error`` is set)."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class ConfigFileHost(Protocol):
    """A host whose ``write`` creates missing configuration files and that can ``remove`` them
    (a writable ``SnapshotHost``). Other hosts get ``install -D`` and ``rm -f``."""

    async def remove(self, path: str) -> None: ...


def _norm(text: str | None) -> str | None:
    return None if text is None else " ".join(text.split())


def _selected(text: str) -> str | None:
    """The chosen word of a sysfs choice file: ``always [madvise] never`` -> ``madvise``."""
    found = _CHOICE.search(text)
    return found.group(1) if found else None


def module_key(name: str) -> str:
    """/proc/modules spells ``nvidia-peermem`` as ``nvidia_peermem``."""
    return name.replace("-", "_")


async def _register(host: Host, target: PciRegisterTarget) -> tuple[int, int]:
    """(absolute offset, current value) of the register, read from the device's config space."""
    result = await host.read(target.config_path)
    if result.data is None:
        raise ActionError(f"{target.config_path}: cannot read ({result.error})")
    absolute = register_offset(result.data, target.capability, target.offset)
    if absolute is None or absolute + target.width > len(result.data):
        raise ActionError(
            f"{target.describe()}: capability {target.capability!r} not found in {len(result.data)} bytes of config "
            "(reading the full config space needs root)"
        )
    return absolute, int.from_bytes(result.data[absolute : absolute + target.width], "little")


async def read_value(host: Host, target: AnyTarget) -> Reading:
    """The target's current value, or why it cannot be read."""
    try:
        if isinstance(target, (ValueFileTarget, ConfigFileTarget)):
            result = await host.read(target.path)
            if result.data is None:
                if isinstance(target, ConfigFileTarget) and result.error == "ENOENT":
                    return Reading(ABSENT)
                return Reading(None, f"{target.path}: cannot read ({result.error})")
            return Reading(result.data.decode("utf-8"))
        if isinstance(target, PciRegisterTarget):
            _, current = await _register(host, target)
            return Reading(f"{current:#0{2 + 2 * target.width}x}")
        if isinstance(target, ModuleTarget):
            modules = await host.read("/proc/modules")
            if modules.data is None:
                return Reading(None, f"/proc/modules: cannot read ({modules.error})")
            names = {line.split(" ", 1)[0] for line in modules.data.decode("utf-8", "replace").splitlines()}
            return Reading("loaded" if module_key(target.module) in names else "absent")
        cmd = await host.run(["systemctl", "is-active", target.unit])
        word = cmd.stdout.strip()
        if cmd.error is not None or not word:
            return Reading(None, f"systemctl is-active {target.unit}: {cmd.error or cmd.stderr.strip() or 'no answer'}")
        return Reading(word)
    except ActionError as exc:
        return Reading(None, str(exc))
    except UnicodeDecodeError:
        return Reading(None, f"{target.describe()}: not text")


def wanted(target: AnyTarget) -> str:
    """The value the change aims for, as :func:`read_value` would report it (registers: the mask's bits)."""
    if isinstance(target, ValueFileTarget):
        return target.value if target.value.endswith("\n") else target.value + "\n"
    if isinstance(target, ConfigFileTarget):
        return target.content
    if isinstance(target, PciRegisterTarget):
        return f"{target.value & target.mask:#0{2 + 2 * target.width}x}"
    if isinstance(target, ModuleTarget):
        return "loaded"
    return "active"


def matches(target: AnyTarget, current: str | None, desired: str | None) -> bool:
    """Whether ``current`` (as read) is ``desired`` (a value this module produced or read)."""
    if current is None or desired is None:
        return current is desired
    if isinstance(target, PciRegisterTarget):
        return int(current, 16) & target.mask == int(desired, 16) & target.mask
    if isinstance(target, ConfigFileTarget):
        return current == desired
    if _norm(current) == _norm(desired):
        return True
    chosen = _selected(current)
    return chosen is not None and chosen == (_selected(desired) or _norm(desired))


def identical(target: AnyTarget, current: str | None, before: str | None) -> bool:
    """Whether restoring ``before`` would change nothing (files: byte for byte)."""
    if isinstance(target, (ValueFileTarget, ConfigFileTarget)):
        return current == before
    return matches(target, current, before)


async def _write(host: Host, path: str, data: bytes, offset: int | None = None) -> None:
    try:
        await host.write(path, data, offset=offset)
    except OSError as exc:
        raise ActionError(f"{path}: {exc.strerror or exc}") from None


async def _run(host: Host, argv: list[str]) -> None:
    result = await host.run(argv, timeout_s=60.0)
    if not result.ok:
        why = result.error or (result.stderr.strip().splitlines() or [f"exit status {result.exit_code}"])[-1]
        raise ActionError(f"{' '.join(argv)}: {why}")


async def _remove(host: Host, path: str) -> None:
    if isinstance(host, ConfigFileHost):
        await host.remove(path)
        return
    await _run(host, ["rm", "-f", "--", path])


async def set_value(host: Host, target: AnyTarget, value: str | None) -> None:
    """Make the target hold ``value`` (the wanted value, or a ``before`` being restored)."""
    if isinstance(target, ValueFileTarget):
        if value is None:
            raise ActionError(f"{target.path}: no value to write")
        try:
            await _write(host, target.path, value.encode())
        except CHANGE_FAILED:
            chosen = _selected(value)  # a choice file takes the word, not the list it reads as
            if chosen is None:
                raise
            await _write(host, target.path, f"{chosen}\n".encode())
    elif isinstance(target, ConfigFileTarget):
        if value is ABSENT:
            await _remove(host, target.path)
            return
        if not isinstance(host, ConfigFileHost) and not await host.exists(target.path):
            await _run(host, ["install", "-D", "-m", "0644", "/dev/null", target.path])
        await _write(host, target.path, value.encode())
    elif isinstance(target, PciRegisterTarget):
        if value is None:
            raise ActionError(f"{target.describe()}: no value to write")
        absolute, current = await _register(host, target)
        new = apply_masked(current, int(value, 16), target.mask)
        if new != current:
            await _write(host, target.config_path, new.to_bytes(target.width, "little"), absolute)
    elif isinstance(target, ModuleTarget):
        if value == "loaded":
            await _run(host, ["modprobe", target.module])
        else:
            await _run(host, ["modprobe", "-r", target.module])
    else:
        assert isinstance(target, ServiceTarget)
        if value == "active":
            await _run(host, ["systemctl", "start", target.unit])
        else:
            await _run(host, ["systemctl", "stop", target.unit])


def revert_text(target: AnyTarget, before: str | None) -> str:
    """How a person would undo the change by hand (one shell line; every word from the host quoted)."""
    if isinstance(target, ValueFileTarget):
        old = shlex.quote(" ".join((before or "").split()))
        if target.label:
            return f"sysctl -w {shlex.quote(target.label)}={old}"
        return f"echo {old} > {shlex.quote(target.path)}"
    if isinstance(target, ConfigFileTarget):
        path = shlex.quote(target.path)
        return f"rm {path}" if before is None else f"restore the previous content of {path} (in this journal)"
    if isinstance(target, PciRegisterTarget):
        register = target.describe().split(" ", 1)[1]
        digits = 2 * target.width
        suffix = {1: "b", 2: "w", 4: "l"}[target.width]
        bits = _hex(before) & target.mask
        return f"setpci -s {shlex.quote(target.device)} {register}.{suffix}={bits:0{digits}x}:{target.mask:0{digits}x}"
    if isinstance(target, ModuleTarget):
        return "nothing (it was already loaded)" if before == "loaded" else f"modprobe -r {shlex.quote(target.module)}"
    return "nothing (it was already active)" if before == "active" else f"systemctl stop {shlex.quote(target.unit)}"


def _hex(text: str | None) -> int:
    try:
        return int(text or "0", 16)
    except ValueError:
        return 0
