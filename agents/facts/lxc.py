"""Proxmox LXC container configs (``/etc/pve/lxc/ID.conf``): devices, mounts, limits, environment."""

from __future__ import annotations

import re

from rigaudit.agents.facts.platform import Platform
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

NVIDIA_MAJOR = 195
_NVIDIA_NODE = r"^/dev/nvidia(?:\d+|ctl|-uvm|-uvm-tools|-modeset|-caps)$"


class DeviceAllow(Record):
    """One ``lxc.cgroup2.devices.allow`` rule: type ``c``/``b``/``a``, major and minor (``*`` = any)."""

    kind: str
    major: str
    minor: str

    def covers(self, major: int, minor: int) -> bool:
        if self.kind == "a":
            return True
        return self.kind == "c" and self.major in ("*", str(major)) and self.minor in ("*", str(minor))


class LxcConfig(Record):
    path: str
    ctid: str
    entries: tuple[tuple[str, str], ...]
    """``key: value`` pairs of the current config (snapshot sections after ``[name]`` are left out)."""

    @property
    def ref(self) -> str:
        return file_ref(self.path)

    def values(self, *keys: str) -> list[str]:
        return [v for k, v in self.entries if k in keys]

    @property
    def allows(self) -> list[DeviceAllow]:
        rules = []
        for value in self.values("lxc.cgroup2.devices.allow", "lxc.cgroup.devices.allow"):
            parts = value.split()
            if parts and parts[0] == "a":
                rules.append(DeviceAllow("a", "*", "*"))
            elif len(parts) >= 2 and ":" in parts[1]:
                major, _, minor = parts[1].partition(":")
                rules.append(DeviceAllow(parts[0], major, minor))
        return rules

    def allowed(self, major: int, minor: int) -> bool:
        return any(rule.covers(major, minor) for rule in self.allows)

    @property
    def mounted_nodes(self) -> set[str]:
        """``/dev/nvidia*`` paths bind-mounted (``lxc.mount.entry``)."""
        nodes = set()
        for value in self.values("lxc.mount.entry"):
            source = value.split()[0] if value.split() else ""
            if re.match(_NVIDIA_NODE, source):
                nodes.add(source)
        return nodes

    @property
    def dev_nodes(self) -> set[str]:
        """``devN: /dev/nvidia0[,gid=...]`` passthrough entries (Proxmox 8.1+; they imply the cgroup rule)."""
        nodes = set()
        for key, value in self.entries:
            if re.fullmatch(r"dev\d+", key):
                path = value.split(",")[0].strip()
                if path.startswith("path="):
                    path = path[5:]
                if re.match(_NVIDIA_NODE, path):
                    nodes.add(path)
        return nodes

    @property
    def passes_gpus(self) -> bool:
        return bool(self.mounted_nodes | self.dev_nodes) or any(
            r.major == str(NVIDIA_MAJOR) for r in self.allows if r.kind == "c"
        )

    @property
    def environment(self) -> dict[str, str]:
        env = {}
        for value in self.values("lxc.environment"):
            key, sep, val = value.partition("=")
            if sep:
                env[key.strip()] = val.strip()
        return env

    @property
    def memlock(self) -> str | None:
        values = self.values("lxc.prlimit.memlock")
        return values[-1] if values else None


def parse_lxc_config(path: str, text: str) -> LxcConfig:
    entries: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            break
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*[:=]\s*(.*)$", line)
        if match:
            entries.append((match.group(1), match.group(2).strip()))
    ctid = path.rsplit("/", 1)[-1].removesuffix(".conf")
    return LxcConfig(path, ctid, tuple(entries))


class LxcConfigs(Record):
    configs: tuple[LxcConfig, ...]
    unreadable: tuple[tuple[str, str], ...]
    """(path, error) for configs that are listed but could not be read."""

    @property
    def gpu_configs(self) -> tuple[LxcConfig, ...]:
        return tuple(c for c in self.configs if c.passes_gpus)


async def read_lxc_configs(probe: Probe, platform: Platform) -> LxcConfigs:
    """Every config listed in ``/etc/pve/lxc`` (memoized reads)."""
    results = await probe.gather(*[lambda p=p: probe.read(p) for p in platform.lxc_configs])
    configs, unreadable = [], []
    for path, result in zip(platform.lxc_configs, results, strict=True):
        text = result.text()
        if text is None:
            unreadable.append((path, result.error or "unreadable"))
        else:
            configs.append(parse_lxc_config(path, text))
    return LxcConfigs(tuple(configs), tuple(unreadable))
