"""Symbolic-link resolution, component by component, as the kernel does it.

One walk serves every place that resolves recorded links: the snapshot reader, the recording
wrapper (which asks the live host for each link) and the transcript rebuilder.
"""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Generator, Mapping

MAX_LINK_HOPS = 40
MAX_COMPONENTS = 4096
"""Components walked for one path, links' targets included (PATH_MAX is 4096 bytes)."""

LinkWalk = Generator[str, "str | None", str]
"""Yields each path to look up as a link; is sent that link's target (or ``None``); returns the result."""


def link_walk(path: str) -> LinkWalk:
    """Walk ``path``: ``..`` climbs from where a link led, relative targets start at the link's folder.

    Like the kernel, it gives up after :data:`MAX_LINK_HOPS` links (or :data:`MAX_COMPONENTS`
    components), returning where it stopped, which then reads as a path that does not exist.
    """
    parts = deque(p for p in path.split("/") if p and p != ".")
    resolved = "/"
    hops = 0
    walked = 0
    while parts:
        part = parts.popleft()
        walked += 1
        if walked > MAX_COMPONENTS:
            return posixpath.join(resolved, part)
        if part == "..":
            resolved = posixpath.dirname(resolved) or "/"
            continue
        candidate = posixpath.join(resolved, part)
        target = yield candidate
        if target is None:
            resolved = candidate
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            return candidate
        if target.startswith("/"):
            resolved = "/"
        parts.extendleft(reversed([p for p in target.split("/") if p and p != "."]))
    return resolved


def resolve_links(links: Mapping[str, str], path: str) -> str:
    """Resolve ``path`` through a table of recorded links."""
    walk = link_walk(path)
    try:
        candidate = next(walk)
        while True:
            candidate = walk.send(links.get(candidate))
    except StopIteration as done:
        result: str = done.value
        return result
