"""Choose the host a command works on: this machine, a snapshot, or a shipped demo."""

from __future__ import annotations

from pathlib import Path

from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.demo import DEMOS, cache_dir, demo_snapshot

DEMO_HELP = f"a snapshot shipped with rigaudit ({', '.join(DEMOS)}); no GPU needed"


def demo_path(demo: str) -> Path:
    """The unpacked snapshot of ``--demo [NAME]`` ("default" when no name was given); one line when it cannot be."""
    try:
        return demo_snapshot(None if demo == "default" else demo)
    except KeyError:
        raise UsageError(f"no demo named {demo!r}; choose one of: {', '.join(DEMOS)}") from None
    except OSError as exc:
        raise UsageError(
            f"cannot unpack the demo into {cache_dir()}: {exc.strerror or exc}; set XDG_CACHE_HOME to a writable folder"
        ) from None


class HostSource(Record):
    """Which host a command works on (``--snapshot``, ``--demo``; neither: this machine) and the replay latency."""

    snapshot: Path | None = None
    demo: str | None = None
    replay_latency_ms: float = 0.0


def open_host(source: HostSource) -> Host:
    latency = max(0.0, source.replay_latency_ms) / 1000.0
    demo, snapshot = source.demo, source.snapshot
    if demo is not None:
        return _snapshot_host(demo_path(demo), latency)
    if snapshot is not None:
        return _snapshot_host(snapshot, latency)
    if latency:
        raise UsageError("--replay-latency-ms only applies to --snapshot or --demo")
    from rigaudit.tools.hosts.local import LocalHost

    return LocalHost()


def _snapshot_host(path: Path, latency_s: float) -> Host:
    from rigaudit.tools.hosts.snapshot import SnapshotHost  # imported for a snapshot only: a live check starts without it

    return SnapshotHost(path, latency_s=latency_s)


async def in_container(host: Host) -> bool:
    """Whether ``host`` is itself a container (steps meant for the container then run on it)."""
    from rigaudit.agents.facts.platform import detect_platform
    from rigaudit.tools.hosts.probe import Probe

    try:
        return (await detect_platform(Probe(host))).in_container
    except Exception:  # platform detection is a hint; a host it cannot read is treated as the host
        return False
