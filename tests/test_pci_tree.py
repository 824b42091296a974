"""rigaudit.tools.pci's tree helpers: bridges above a device and the switch two devices share."""

from __future__ import annotations

from pathlib import Path

import anyio

from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.pci import bridges_above, bridges_between, common_upstream, device_chain, root_complex
from rigaudit.tools.pci.sysfs import read_chain, read_driver

TARGET = "../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0"


def test_chain_from_link_target() -> None:
    assert device_chain(TARGET) == ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0")
    assert bridges_above(TARGET) == ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0")
    assert root_complex(TARGET) == "pci0000:00"
    assert bridges_above("../../../devices/pci0000:00/0000:00:14.0") == ()


def test_common_upstream_and_bridges_between() -> None:
    a = device_chain(TARGET)
    b = ("0000:00:01.1", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0")
    far = ("0000:40:01.1", "0000:41:00.0", "0000:42:00.0", "0000:43:00.0")
    assert common_upstream(a, b) == "0000:01:00.0"
    assert bridges_between(a, b) == ("0000:02:00.0", "0000:02:01.0")
    assert common_upstream(a, far) is None and bridges_between(a, far) == ()
    nested = ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0")
    assert common_upstream(a, nested) == "0000:02:00.0"
    assert bridges_between(a, nested) == ("0000:05:00.0", "0000:06:00.0")


def test_chain_and_driver_read_through_the_snapshot(seed_dir: Path) -> None:
    probe = Probe(SnapshotHost(seed_dir))
    chain = anyio.run(read_chain, probe, "0000:c4:00.0")
    assert chain.chain == ("0000:c0:01.1", "0000:c1:00.0", "0000:c2:01.0", "0000:c4:00.0")
    assert chain.bridges == ("0000:c0:01.1", "0000:c1:00.0", "0000:c2:01.0")
    assert chain.ref == "link:/sys/bus/pci/devices/0000:c4:00.0"
    assert anyio.run(read_driver, probe, "0000:c4:00.0") == "nvidia"
    assert anyio.run(read_driver, probe, "0000:c2:01.0") == "pcieport"
    missing = anyio.run(read_chain, probe, "0000:ff:00.0")
    assert missing.chain is None and missing.bridges == ()
