"""A rootless container: one whose root is an unprivileged user of its host (Podman's ``rootless=1``, a user namespace
that maps uid 0 to that user).

Reads ``/run/.containerenv`` (Podman writes ``rootless=1`` in a rootless container: podman-run(1)) and
``/proc/self/uid_map`` (``0 1001 1``: uid 0 inside is uid 1001 outside). What follows from it, and what the rules
that give a container fix must say: a rootless container cannot raise a resource limit above its user's hard limit
(``--ulimit memlock=-1:-1`` fails with ``setrlimit: operation not permitted``), so such a limit is raised for the user
on the host first; and systemd delegates only the controllers its ``Delegate=`` names to a user's cgroups (memory and
pids by default), so a CPU quota cannot apply where the cpu controller is not delegated.
"""

from __future__ import annotations

import re

from rigaudit.agents.facts.platform import Platform
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe

UID_MAP = "/proc/self/uid_map"
CONTAINERENV = "/run/.containerenv"


class Rootless(Record):
    """Whether the container the audit runs in is rootless, and as which host user."""

    rootless: bool | None
    """None: neither /run/.containerenv nor /proc/self/uid_map told."""
    host_uid: int | None
    """The host uid this container's root is (uid_map's first line), when it is not 0."""
    how: str


def host_uid(uid_map: str | None) -> int | None:
    """The outside uid of inside uid 0 (None: unread, or the identity map of a rootful container)."""
    match = re.match(r"\s*0\s+(\d+)\s+(\d+)", uid_map or "")
    if match is None:
        return None
    outside = int(match.group(1))
    return outside if outside != 0 else None


def _containerenv_rootless(text: str | None) -> bool | None:
    match = re.search(r"^rootless=(\d)", text or "", re.MULTILINE)
    return None if match is None else match.group(1) == "1"


async def read_rootless(probe: Probe, platform: Platform, contained: tuple[int, ...] = ()) -> Rootless:
    """This container's rootlessness; on a host, that of the servers' containers (``contained``: their pids), whose
    ``/proc/PID/uid_map`` the host reads."""
    if not platform.in_container:
        maps = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/uid_map") for p in contained])
        for pid, uid_map in zip(contained, maps, strict=True):
            if (uid := host_uid(uid_map)) is not None:
                return Rootless(True, uid, f"/proc/{pid}/uid_map of a server: its container's uid 0 is host uid {uid}")
        return Rootless(False, None, "not a container")
    env, uid_map = await probe.gather(lambda: probe.text(CONTAINERENV), lambda: probe.text(UID_MAP))
    uid = host_uid(uid_map)
    said = _containerenv_rootless(env)
    if said is not None:
        return Rootless(said, uid, f"{CONTAINERENV}: rootless={int(said)}")
    if uid_map is not None:
        return Rootless(uid is not None, uid, f"{UID_MAP}: uid 0 is host uid {uid if uid is not None else 0}")
    return Rootless(None, None, f"{CONTAINERENV} and {UID_MAP} unread")
