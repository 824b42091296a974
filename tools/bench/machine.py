"""Which machine and container a benchmark's load came from, as results and calibrations keep them.

A host name does not tell machines apart (containers and cloned VMs share theirs, many are
"localhost") and changes when a host is renamed; ``/etc/machine-id`` is made at install and kept
across reboots and renames. Only ``machine-id:<16 hex digits of its SHA-256>`` is kept, the form
:mod:`rigaudit.orchestrator.hosts.identity` gives audits and reports and journals record (never the id
itself). A machine without a readable id is known by its name alone, which callers say in one line.

Containers built from one image share the ``/etc/machine-id`` baked into it, so inside one the
machine-id does not tell two containers apart, on one host or on two: :func:`container_token` names
the container too (a digest of the engine's id), and says when it cannot. The kernel's boot id is
the last resort, for a container that shows no id: it tells hosts apart (and sandboxes with a kernel
of their own), not two containers on one host, and a reboot changes it; outside containers it is not
used (a calibration must outlive the reboot a fix needs).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from rigaudit.tools.hosts.container_signs import ENGINE_ID, Signs, cgroup_engine_id, container_signs, parse_mounts

MACHINE_ID = Path("/etc/machine-id")
TOKEN = r"machine-id:[0-9a-f]{16}"
"""The shape of what a result's ``host_id`` and a calibration's hold (a pattern: ``re.fullmatch(TOKEN, text)``)."""
_ID = r"[0-9a-f]{32}"


def digest(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text``: how rigaudit keeps an id (never the id itself)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def token(raw: bytes | None) -> str:
    """``machine-id:<digest>`` of a machine-id file's content; ``""`` when it holds no id (empty, ``uninitialized``).

    A file that holds the token already (a snapshot rebuilt from a transcript, where ids are digests) is that token."""
    text = (raw or b"").decode("ascii", "replace").strip().lower()
    if re.fullmatch(TOKEN, text):
        return text
    return f"machine-id:{digest(text)}" if re.fullmatch(_ID, text) else ""


def this_machine(path: Path = MACHINE_ID) -> str:
    """The token of the machine rigaudit runs on; ``""`` when its machine-id cannot be read."""
    try:  # non-blocking, regular files only: a FIFO or a device planted there is no id, and never a hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return ""
    try:
        return token(os.read(fd, 4096)) if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    except OSError:
        return ""
    finally:
        os.close(fd)


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_NO_UUID = frozenset({"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"})
PRODUCT_UUID = "/sys/class/dmi/id/product_uuid"


def product_digest(raw: bytes | None) -> str:
    """The digest of a DMI product UUID, or ``""`` for none (or the all-zero/all-ones placeholders)."""
    text = (raw or b"").decode("ascii", "replace").strip().lower()
    if digested := re.fullmatch(r"product-uuid:([0-9a-f]{16})", text):
        return digested.group(1)  # a snapshot rebuilt from a transcript holds the digest
    return digest(text) if re.fullmatch(_UUID, text) and text not in _NO_UUID else ""


def short(host_id: str) -> str:
    """``machine-id 1a2b3c4d`` for people; ``""`` for none."""
    return f"machine-id {host_id.removeprefix('machine-id:')[:8]}" if host_id else ""


# --- the container the load came from -----------------------------------------------------------------

CONTAINER_NONE = "container:none"
"""Nothing says rigaudit runs in a container: the machine-id is the machine's."""
CONTAINER_UNKNOWN = "container:unknown"
"""In a container whose id cannot be read: its machine-id may be its image's, and nothing tells it apart."""
CONTAINER_PATTERN = r"container:(none|unknown|[0-9a-f]{16})|(container|kernel)-boot:[0-9a-f]{16}"
"""What a result's and a calibration's ``container`` hold."""
MAX_PROC_BYTES = 1 << 20
_BOUND_FROM_ITS_FOLDER = frozenset({"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"})
_PODMAN_ID = r'(?m)^id="?([0-9a-f]{64})"?\s*$'
_LXC_BOOT_ID = r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}"
Reader = Callable[[str], "bytes | None"]
"""A file's content (at most :data:`MAX_PROC_BYTES`), or None when it is absent or unreadable."""


def _text(raw: bytes | None) -> str:
    return (raw or b"").decode("utf-8", "replace")


def _mounted_id(mountinfo: str) -> str | None:
    """The engine's id in the source of the files it binds into every container (``/etc/hostname`` from
    ``.../containers/<id>/hostname``: Docker, Podman, containerd and CRI-O alike); never a mount of the host's own."""
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4 and fields[4] in _BOUND_FROM_ITS_FOLDER and (found := re.search(ENGINE_ID, fields[3])):
            return found.group(1)
    return None


def container_token(read: Reader, environ: Mapping[str, str]) -> str:
    """Which container this process runs in, from its own files (``read``) and environment:

    - ``container:<digest of the engine's id>``: the 64-hex id Docker, Podman, containerd and CRI-O give a
      container, from the files bound into it (``/proc/self/mountinfo``), its cgroup, or Podman's
      ``/run/.containerenv``. It is made when the container is created and kept across its restarts, and
      two containers of one image never share it.
    - ``container-boot:<digest>``: LXC shows no id inside; ``/dev/.lxc-boot-id`` is new at every start of
      the container, so only the same start is known to be the same container.
    - ``kernel-boot:<digest>``: a container whose id cannot be read (the signs the audit reads, in
      :mod:`rigaudit.tools.hosts.container_signs`: ``/.dockerenv``, ``/run/.containerenv``, ``$container``, a
      runtime's cgroup or volumes, a Kubernetes pod), known by the kernel's boot id: the same host (or
      sandbox) in the same boot, where other containers of one image would share it too.
    - :data:`CONTAINER_UNKNOWN`: such a container without a readable boot id.
    - :data:`CONTAINER_NONE`: nothing says it is one.

    Only digests are kept, as for the machine-id."""
    mountinfo, self_cgroup = _text(read("/proc/self/mountinfo")), _text(read("/proc/self/cgroup"))
    found = _mounted_id(mountinfo) or cgroup_engine_id(self_cgroup)
    containerenv = read("/run/.containerenv")
    if found is None and containerenv is not None and (podman := re.search(_PODMAN_ID, _text(containerenv))):
        found = podman.group(1)
    if found is not None:
        return f"container:{digest(found)}"
    lxc = _text(read("/dev/.lxc-boot-id")).strip().lower()
    if re.fullmatch(_LXC_BOOT_ID, lxc):
        return f"container-boot:{digest(lxc)}"
    signs = Signs(
        dockerenv=read("/.dockerenv") is not None,
        containerenv=_text(containerenv) if containerenv is not None else None,
        lxc_boot_id=read("/dev/.lxc-boot-id") is not None,
        environ=environ,
        init_cgroup=_text(read("/proc/1/cgroup")),
        self_cgroup=self_cgroup,
        mounts=parse_mounts(_text(read("/proc/mounts")), mountinfo),
        environ_ref="env:",
    )
    if container_signs(signs)[0]:  # the audit's own reading of the signs: both agree on "a container"
        boot = _text(read("/proc/sys/kernel/random/boot_id")).strip().lower()
        return f"kernel-boot:{digest(boot)}" if re.fullmatch(_LXC_BOOT_ID, boot) else CONTAINER_UNKNOWN
    return CONTAINER_NONE


def _read_local(path: str) -> bytes | None:
    """A local file's first :data:`MAX_PROC_BYTES`, non-blocking, regular files and /proc only; None otherwise."""
    try:  # a FIFO or a device planted there is no answer, and never a hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size < MAX_PROC_BYTES and (chunk := os.read(fd, MAX_PROC_BYTES - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def this_container() -> str:
    """The container token of the process rigaudit runs in (:func:`container_token` over its own files)."""
    return container_token(_read_local, os.environ)


def same_container(a: str | None, b: str | None) -> bool | None:
    """Whether two recorded containers are one: True, False, or None when nothing can tell.

    ``None`` for a side: not recorded (a result or calibration from before containers were): as the same as
    :data:`CONTAINER_NONE` only when the other is outside any container too (machine-id alone decided then).
    One engine id each: equal or not. Two LXC starts: the same start, or cannot tell (a restart, or another
    container cloned with its machine-id). Two kernel boots: the same (see :func:`shared_by_siblings`), or
    cannot tell (a reboot, or another host). Unknown: cannot tell."""
    a, b = a or "", b or ""
    if not a or not b:
        return True if {a, b} <= {"", CONTAINER_NONE} else None
    if CONTAINER_UNKNOWN in (a, b):
        return None
    if a == b:
        return True
    if a.partition(":")[0] == b.partition(":")[0] and a.partition(":")[0] in ("container-boot", "kernel-boot"):
        return None
    return False


def shared_by_siblings(container: str | None) -> bool:
    """Known only by the kernel's boot id: another container of the same image on this host would look the same."""
    return bool(container) and str(container).startswith("kernel-boot:")


def container_text(container: str | None) -> str:
    """``container 1a2b3c4d``, ``container of unknown id``, ``no container``; ``""`` when not recorded."""
    if not container:
        return ""
    if container == CONTAINER_NONE:
        return "no container"
    if container == CONTAINER_UNKNOWN:
        return "a container of unknown id"
    kind, _, digest = container.partition(":")
    if kind == "kernel-boot":
        return f"a container of unknown id on kernel boot {digest[:8]}"
    return f"LXC start {digest[:8]}" if kind == "container-boot" else f"container {digest[:8]}"
