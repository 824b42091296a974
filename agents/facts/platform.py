"""Where the audit runs: bare metal, a VM guest, a container; and whether it hosts containers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.probe import Probe

PlatformKind = Literal["bare_metal", "vm", "lxc", "docker", "container", "unknown"]
_CONTAINER_NAMES = {"lxc", "lxc-libvirt", "docker", "podman", "systemd-nspawn", "openvz", "wsl", "container-other"}


@dataclass(frozen=True)
class Platform:
    kind: PlatformKind
    virt: str | None
    """What systemd-detect-virt (or its stand-ins) named: ``kvm``, ``lxc``, ``none``..."""
    evidence: tuple[str, ...]
    lxc_configs: tuple[str, ...]
    """``/etc/pve/lxc/*.conf`` paths: this host runs Proxmox containers."""
    how: str
    vm_below: str | None = None
    """For a container: the hypervisor of the VM it runs in (``kvm``, ``hypervisor flag``), when one shows."""

    @property
    def label(self) -> str:
        """``bare_metal``, ``vm (kvm)``, ``docker``, ``docker in a VM (kvm)``..."""
        text = self.kind + (f" ({self.virt})" if self.virt and self.virt not in ("none", self.kind) else "")
        return text + (f" in a VM ({self.vm_below})" if self.vm_below else "")

    @property
    def is_guest(self) -> bool:
        return self.kind in ("vm", "lxc", "docker", "container")

    @property
    def in_container(self) -> bool:
        return self.kind in ("lxc", "docker", "container")

    @property
    def bare_metal(self) -> bool:
        return self.kind == "bare_metal"


def _answer(cmd: CommandResult) -> str | None:
    """systemd-detect-virt prints its answer even when it exits 1 ("none")."""
    if cmd.error is None and cmd.stdout.strip():
        return cmd.stdout.strip().splitlines()[0]
    return None


async def detect_platform(probe: Probe) -> Platform:
    """The platform, with the VM below a container named too (a container in a cloud VM is common)."""
    platform = await _detect(probe)
    if not platform.in_container:
        return platform
    vm = _answer(await probe.run(["systemd-detect-virt", "--vm"]))
    cpuinfo = await probe.text("/proc/cpuinfo")
    flagged = cpuinfo is not None and any(line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines())
    below = vm if vm and vm != "none" else ("hypervisor flag" if flagged else None)
    if below is None:
        return platform
    return replace(platform, vm_below=below, how=f"{platform.how}; inside a VM ({below})")


async def _detect(probe: Probe) -> Platform:
    refs: list[str] = []
    virt_vm = await probe.run(["systemd-detect-virt", "--vm"])
    virt_ct = await probe.run(["systemd-detect-virt", "--container"])
    cpuinfo = await probe.text("/proc/cpuinfo")
    dockerenv = await probe.exists("/.dockerenv")
    environ1 = await probe.read("/proc/1/environ")
    lxc_dir = await probe.list_dir("/etc/pve/lxc")
    configs = tuple(f"/etc/pve/lxc/{n}" for n in (lxc_dir.entries or ()) if n.endswith(".conf"))

    container = _answer(virt_ct)
    vm = _answer(virt_vm)
    plain = _answer(await probe.run(["systemd-detect-virt"]))
    refs.append("cmd:systemd-detect-virt --container")

    init_env = (environ1.data or b"").replace(b"\x00", b"\n").decode("utf-8", "replace")
    if container and container != "none":
        kind: PlatformKind = (
            "lxc" if container.startswith("lxc") else "docker" if container in ("docker", "podman") else "container"
        )
        return Platform(kind, container, tuple(refs), configs, f"systemd-detect-virt --container: {container}")
    if dockerenv:
        return Platform("docker", "docker", ("exists:/.dockerenv",), configs, "/.dockerenv exists")
    if "container=lxc" in init_env:
        return Platform("lxc", "lxc", ("file:/proc/1/environ",), configs, "container=lxc in PID 1's environment")
    if "container=" in init_env:
        return Platform("container", "container", ("file:/proc/1/environ",), configs, "container= in PID 1's environment")
    if vm and vm != "none":
        return Platform("vm", vm, ("cmd:systemd-detect-virt --vm",), configs, f"systemd-detect-virt --vm: {vm}")
    if plain and plain != "none":
        kind = (
            "lxc"
            if plain.startswith("lxc")
            else "docker"
            if plain in ("docker", "podman")
            else "container"
            if plain in _CONTAINER_NAMES
            else "vm"
        )
        return Platform(kind, plain, ("cmd:systemd-detect-virt",), configs, f"systemd-detect-virt: {plain}")
    hypervisor_flag = cpuinfo is not None and any(
        line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines()
    )
    if hypervisor_flag:
        return Platform("vm", "unknown-hypervisor", ("file:/proc/cpuinfo",), configs, "the CPU reports the hypervisor flag")
    if container == "none" or vm == "none" or plain == "none" or cpuinfo is not None:
        return Platform(
            "bare_metal",
            "none",
            ("cmd:systemd-detect-virt", "file:/proc/cpuinfo"),
            configs,
            "no hypervisor flag, no container markers",
        )
    return Platform("unknown", None, (), configs, "neither systemd-detect-virt nor /proc/cpuinfo could be read")
