"""The one link walk shared by the snapshot reader, the recorder and the transcript rebuilder."""

from __future__ import annotations

from rigaudit.tools.hosts.links import MAX_LINK_HOPS, resolve_links

LINKS = {
    "/sys/bus/pci/devices/0000:03:00.0": "../../../devices/pci0000:00/0000:00:01.1/0000:03:00.0",
    "/a": "/b",
    "/b": "/a",
}


def test_relative_targets_start_at_the_links_folder() -> None:
    assert resolve_links(LINKS, "/sys/bus/pci/devices/0000:03:00.0/vendor") == (
        "/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0/vendor"
    )


def test_dotdot_climbs_from_the_link_target_not_the_link() -> None:
    assert resolve_links(LINKS, "/sys/bus/pci/devices/0000:03:00.0/../config") == ("/sys/devices/pci0000:00/0000:00:01.1/config")


def test_loops_stop_after_the_hop_limit() -> None:
    assert MAX_LINK_HOPS == 40
    assert resolve_links(LINKS, "/a/x") in ("/a", "/b")


def test_no_links_is_the_path_itself() -> None:
    assert resolve_links({}, "/proc/./sys//kernel/numa_balancing") == "/proc/sys/kernel/numa_balancing"
