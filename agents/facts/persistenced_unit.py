"""nvidia-persistenced's unit: the options its ExecStart gives the daemon (drop-ins last, as systemd merges them).

A unit that starts the daemon with ``--no-persistence-mode`` keeps it running and leaves persistence mode off on
purpose (the option NVIDIA's driver persistence guide documents). The fix for GPUs without persistence is then the
unit's option, not starting the daemon (``deliberate.PERSISTENCE_BY_UNIT``).
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref

UNIT = "nvidia-persistenced.service"
_PLACES = (f"/etc/systemd/system/{UNIT}", f"/usr/lib/systemd/system/{UNIT}", f"/lib/systemd/system/{UNIT}")
_DROPINS = f"/etc/systemd/system/{UNIT}.d"


class PersistencedUnit(Record):
    path: str
    exec_start: str
    """The effective ExecStart line (the last non-empty one: a drop-in's ``ExecStart=`` resets it)."""
    refs: tuple[str, ...]

    @property
    def no_persistence_mode(self) -> bool:
        return "--no-persistence-mode" in self.exec_start.split()


def _exec_start(text: str, current: str) -> str:
    for line in text.splitlines():
        match = re.match(r"\s*ExecStart\s*=\s*(.*?)\s*$", line)
        if match:
            current = match.group(1)
    return current


async def collect_persistenced_unit(probe: Probe) -> PersistencedUnit | None:
    """The unit as systemd would load it, or None when no unit file is readable."""
    for path in _PLACES:
        text = await probe.text(path)
        if text is None:
            continue
        refs = [file_ref(path)]
        exec_start = _exec_start(text, "")
        listing = await probe.list_dir(_DROPINS)
        for name in sorted(e for e in listing.entries or () if e.endswith(".conf"))[:8]:
            dropin = f"{_DROPINS}/{name}"
            exec_start = _exec_start(await probe.text(dropin) or "", exec_start)
            refs.append(file_ref(dropin))
        return PersistencedUnit(path, exec_start, tuple(refs))
    return None
