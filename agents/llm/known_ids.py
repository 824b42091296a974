"""The host's identifiers, learned before a model sees anything of the host.

An identifier is digested where its file, label or shape says it is one (rigaudit.tools.redact.digest_ids); once
met it is digested wherever it is printed, in any form (rigaudit.tools.redact._known). So that the first tool
result that prints one unlabelled (``dmidecode -s system-serial-number``, ``cat`` through a link of another name,
``xxd``, ``setpci ... ECAP_DSN+4.l``) already finds it known, in what the model gets and in the transcript alike,
the files that hold the host's ids, NVML's serials and UUIDs, and the PCI devices' Device Serial Numbers are read
first, straight from the host (not as evidence: nothing of this is shown to the model or cited), once a host,
within :data:`LEARN_S` seconds.
"""

from __future__ import annotations

import contextlib
import posixpath
import weakref
from collections.abc import Sequence

import anyio

from rigaudit.tools.hosts.base import Host
from rigaudit.tools.policy import filesystem_for
from rigaudit.tools.policy.paths import resolved_path
from rigaudit.tools.redact import DMI_SERIALS, digest_ids, digest_nvml, file_kind, learn_config
from rigaudit.tools.redact._known import epoch

LEARN_S = 5.0
MOST_GPUS = 64
FILES = (
    "/etc/machine-id",
    "/var/lib/dbus/machine-id",
    "/proc/sys/kernel/random/boot_id",
    "/dev/.lxc-boot-id",
    "/sys/class/dmi/id/product_uuid",
    *(f"/sys/class/dmi/id/{name}" for name in sorted(DMI_SERIALS)),
)
SERIAL_DIRS = ("/sys/class/nvme",)
PCI_DEVICES = "/sys/bus/pci/devices"
MOST_DEVICES = 256
"""PCI configuration spaces read for their Device Serial Numbers (``setpci ... ECAP_DSN+4.l`` prints one)."""
"""Folders whose entries each have a ``serial`` file (an NVMe controller's)."""
_learned: weakref.WeakKeyDictionary[Host, int] = weakref.WeakKeyDictionary()
"""The hosts read, by the epoch of what is known (forgetting reads them again)."""


async def _file(host: Host, path: str) -> None:
    result = await host.read(path)
    if result.data:
        digest_ids(result.data[:4096].decode("utf-8", "replace"), path=path, content=True)


async def _nvml(host: Host) -> None:
    count = await host.nvml("nvmlDeviceGetCount")
    if count.error or not isinstance(count.value, int) or isinstance(count.value, bool):
        return
    for index in range(min(max(count.value, 0), MOST_GPUS)):
        for function in ("nvmlDeviceGetSerial", "nvmlDeviceGetUUID"):
            result = await host.nvml(function, index)
            if result.error is None:
                digest_nvml(function, result.value)


async def learn_host_ids(host: Host) -> None:
    """Read the host's identifiers once (each becomes known); what cannot be read in time stays unknown."""
    try:
        if _learned.get(host) == epoch():
            return
    except TypeError:  # a host that cannot be weakly referenced is read each time
        pass
    with anyio.move_on_after(LEARN_S):
        for path in FILES:
            await _file(host, path)
        for folder in SERIAL_DIRS:
            listing = await host.list_dir(folder)
            for name in (listing.entries or ())[:MOST_GPUS]:
                await _file(host, f"{folder}/{name}/serial")
        await _nvml(host)
        devices = await host.list_dir(PCI_DEVICES)
        for name in sorted(devices.entries or ())[:MOST_DEVICES]:
            config = await host.read(f"{PCI_DEVICES}/{name}/config")
            if config.data:
                learn_config(config.data)
        with contextlib.suppress(TypeError):
            _learned[host] = epoch()


async def learn_named_ids(host: Host, argv: Sequence[str]) -> None:
    """Before a command runs, the identifier files its words name, where the kernel resolves them, read (``cat
    /tmp/x`` where ``/tmp/x`` links to a disk's ``serial``): its output then finds their values known wherever it is
    digested, the transcript's record of the command (by its words as given) too."""
    fs = filesystem_for(host)
    paths = {resolved_path(w, fs) for w in argv[1:] if w.startswith("/")}
    with anyio.move_on_after(LEARN_S):
        for path in sorted(p for p in paths if file_kind(p) and posixpath.basename(p))[:16]:
            await _file(host, path)
