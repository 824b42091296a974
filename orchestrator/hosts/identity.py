"""Which machine a plan, a report or a change belongs to: the host's identity.

A machine is known by what it records about itself, strongest first:

- ``/etc/machine-id`` (systemd: made at install, kept across reboots and renames; a VM cloned
  without ``systemd-machine-id-setup`` keeps its template's, which is why the next one exists);
- the DMI product UUID (``/sys/class/dmi/id/product_uuid``: the firmware's, readable by root;
  absent in DMI-less microVMs);
- the host name (the snapshot's ``hostname``, or this machine's): what is left when neither is
  readable, as in snapshots that did not record them.

Two identities are the same machine when they share the strongest kind both have. Names alone decide
only what authorises nothing (which report a section is appended to, a label): a change (apply,
rollback, a benchmark's switches) needs an id on both sides that matches (:func:`change_refusal`), and
a fleet merges two results only by their ids. Only digests of the ids are kept
(``machine-id:1a2b3c4d5e6f7a8b``): enough to tell two machines apart, nothing a machine-id could be
used for. An audit records its host's identity in the ``host_id`` fact; system-improve.md records it
in a comment under its title.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from rigaudit.tools.bench.machine import PRODUCT_UUID, product_digest, token
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import FileResult, Host

Reader = Callable[[str], Awaitable[FileResult]]

MACHINE_ID = "/etc/machine-id"
FACT = "host_id"
"""The baseline fact (``AuditResult.host.facts``) that holds :meth:`HostIdentity.token`."""
_TOKEN = r"(machine-id|product-uuid):([0-9a-f]{16})"


def machine_digest(raw: bytes | None) -> str:
    """The digest of a machine-id file's content, or ``""`` when it holds none (the one benchmarks key by)."""
    return token(raw).removeprefix("machine-id:")


class HostIdentity(Record):
    name: str
    machine: str = ""
    """Digest of ``/etc/machine-id`` (``""``: not known)."""
    product: str = ""
    """Digest of the DMI product UUID (``""``: not known)."""

    @property
    def unnamed(self) -> bool:
        """Nothing is known of the machine (a report only benchmarks of a server wrote to): any machine fits."""
        return self.name.strip() in ("", "-") and not self.machine and not self.product

    def token(self) -> str:
        """``machine-id:<digest> product-uuid:<digest>`` (what is known), the form facts and reports keep."""
        parts = [f"machine-id:{self.machine}" if self.machine else "", f"product-uuid:{self.product}" if self.product else ""]
        return " ".join(p for p in parts if p)

    def text(self) -> str:
        """``gpu01 (machine-id 1a2b3c4d)``: the name, and the strongest id known, short."""
        if self.machine:
            return f"{self.name} (machine-id {self.machine[:8]})"
        if self.product:
            return f"{self.name} (product uuid {self.product[:8]})"
        return self.name

    @property
    def known(self) -> bool:
        """A machine id (machine-id or product uuid digest) is known: the identity can tell machines apart."""
        return bool(self.machine or self.product)

    def key(self) -> str:
        """The strongest id known (``machine-id:<digest>``, else ``product-uuid:<digest>``; ``""``: none)."""
        return f"machine-id:{self.machine}" if self.machine else f"product-uuid:{self.product}" if self.product else ""

    def proven_same(self, other: HostIdentity) -> bool | None:
        """The same machine by the strongest id both know; ``None`` when they share no kind of id."""
        if self.machine and other.machine:
            return self.machine == other.machine
        if self.product and other.product:
            return self.product == other.product
        return None

    def same_machine(self, other: HostIdentity) -> bool:
        """The same machine by the strongest id both know, else by name: for labels only, never to authorise."""
        proven = self.proven_same(other)
        return proven if proven is not None else self.name.strip().lower() == other.name.strip().lower()

    @classmethod
    def parse(cls, name: str, token: str) -> HostIdentity:
        """The identity :meth:`token` wrote (unknown words are ignored)."""
        found = dict(re.findall(_TOKEN, token))
        return cls(name, found.get("machine-id", ""), found.get("product-uuid", ""))


async def identify(host: Host, read: Reader | None = None) -> HostIdentity:
    """``host``'s identity, from what it lets be read (a snapshot: what it recorded); ``read`` reads
    through another way to the same host (an audit's probe, so that the reads are recorded)."""
    read = read or host.read
    machine = await read(MACHINE_ID)
    product = await read(PRODUCT_UUID)
    return HostIdentity(host.name, machine_digest(machine.data), product_digest(product.data))


def this_machine() -> HostIdentity:
    """The identity of the machine rigaudit runs on (for benchmarks, which always run here)."""

    def raw(path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()[:4096]
        except OSError:
            return None

    return HostIdentity(socket.gethostname(), machine_digest(raw(MACHINE_ID)), product_digest(raw(PRODUCT_UUID)))


def mismatch(what: str, recorded: HostIdentity, here: HostIdentity) -> str | None:
    """One line refusing ``what`` of another machine, naming both; ``None`` when it may be this one (names
    decide when no id is shared): for what authorises no change (a report's sections, a snapshot copy)."""
    if recorded.same_machine(here) or recorded.unnamed:
        return None
    return f"{what} is for {recorded.text()}, not {here.text()}: refusing to use it here"


REAUDIT = "audit this machine again (rigaudit audit --json FILE) and use that file"


def change_refusal(what: str, recorded: HostIdentity | None, here: HostIdentity) -> str | None:
    """One line refusing to change this machine with ``what`` (a plan, a journal) made on ``recorded``; ``None``
    when an id proves it is this one. A name alone never does: ``recorded`` of ``None`` or without an id is
    refused, saying what is missing."""
    if recorded is None or not recorded.known:
        named = f" (it names only {recorded.name!r})" if recorded is not None and recorded.name.strip() else ""
        return f"{what} records no machine identity (machine-id or product uuid){named}: {REAUDIT}"
    if not here.known:
        return f"this machine shows no machine-id or product uuid, so it cannot be proven to be {recorded.text()}: refusing"
    same = recorded.proven_same(here)
    if same is None:
        return f"{what} is for {recorded.text()}, whose kind of id this machine does not show: {REAUDIT}"
    if not same:
        return f"{what} is for {recorded.text()}, not {here.text()}: refusing to use it here"
    return None


__all__ = [
    "FACT",
    "REAUDIT",
    "HostIdentity",
    "change_refusal",
    "identify",
    "machine_digest",
    "mismatch",
    "product_digest",
    "this_machine",
]
