"""Stable placeholders: the same value always gets the same one within a bundle.

Placeholders are numbered per kind in the order values are first met, and keep the value's
format where rules parse it: a MAC stays a MAC (``02:00:00:00:00:01``, locally administered), a
GPU UUID stays a GPU UUID (``GPU-00000000-0000-0000-0000-000000000001`` is the first GPU met, in
NVML index order), an IP address stays an address (from the ranges reserved for documentation).
A placeholder that already occurs in the original is skipped, so it can never be mistaken for one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Literal

Kind = Literal["hostname", "domain", "container", "serial", "gpu_uuid", "uuid", "mac", "ip", "user", "machine_id"]
KIND_LABELS: dict[str, str] = {
    "hostname": "hostnames",
    "domain": "domain names",
    "container": "container and VM names",
    "serial": "serial numbers and asset tags",
    "gpu_uuid": "GPU UUIDs",
    "uuid": "other UUIDs (DMI product UUID, boot and file system ids)",
    "mac": "MAC and hardware (InfiniBand GUID) addresses",
    "ip": "IP addresses",
    "user": "user names",
    "machine_id": "machine ids",
}
_DOC_V4 = ("192.0.2.", "198.51.100.", "203.0.113.")


def _ipv4(n: int) -> str:
    block, host = divmod(n - 1, 254)
    if block < len(_DOC_V4):
        return f"{_DOC_V4[block]}{host + 1}"
    rest = n - 1 - 254 * len(_DOC_V4)
    return f"198.18.{rest // 254 % 256}.{rest % 254 + 1}"


def _mac(n: int) -> str:
    return f"02:00:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}"


MAKERS: dict[str, Callable[[int], str]] = {
    "hostname": lambda n: f"host-{n}",
    "domain": lambda n: f"domain-{n}.invalid",
    "container": lambda n: f"container-{n}",
    "serial": lambda n: f"serial-{n}",
    "gpu_uuid": lambda n: f"00000000-0000-0000-0000-{n:012d}",
    "uuid": lambda n: f"00000000-0000-0000-0001-{n:012d}",
    "mac": _mac,
    "ip": _ipv4,
    "ipv6": lambda n: f"2001:db8::{n:x}",
    "ipv6_link": lambda n: f"fe80::db8:{n:x}",
    "user": lambda n: f"user-{n}",
    "machine_id": lambda n: f"{n:032x}",
    "dsn": lambda n: "00-00-00-00-00-00-" + f"{n:04x}"[:2] + "-" + f"{n:04x}"[2:],
    "guid": lambda n: f"0200:0000:0000:{n:04x}",
    "ibguid": lambda n: f"02:00:00:00:00:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}",
}
"""Placeholder makers by style; several styles can share one kind's counter (``dsn`` is a ``serial``)."""


class Pseudonyms:
    """The value -> placeholder maps of one bundle, and how often each kind was replaced."""

    def __init__(self, taken: Callable[[str], bool] = lambda _: False) -> None:
        self._taken = taken
        self._maps: dict[str, dict[str, str]] = {}
        self._counters: Counter[str] = Counter()
        self.occurrences: Counter[str] = Counter()
        self._used: dict[str, set[str]] = {}
        """kind -> the placeholders actually written: the distinct values replaced."""
        self.originals: dict[str, tuple[Kind, str]] = {}
        """Every original value given a placeholder -> (kind, placeholder), for the final leak check."""
        self.produced: set[str] = set()
        """Every placeholder handed out, lower-cased: text already scrubbed is never scrubbed again."""

    def placeholder(self, kind: Kind, value: str, style: str | None = None, *, key: str | None = None) -> str:
        """The placeholder of ``value`` (made on first sight); ``key`` is how values are matched (lower-cased...)."""
        key = key if key is not None else value.lower()
        mapping = self._maps.setdefault(kind, {})
        found = mapping.get(key)
        if found is None:
            make = MAKERS[style or kind]
            while True:
                self._counters[kind] += 1
                found = make(self._counters[kind])
                if not self._taken(found):
                    break
            mapping[key] = found
            self.produced.add(found.lower())
            self.originals.setdefault(value, (kind, found))
        return found

    def assign(self, kind: Kind, value: str, placeholder: str) -> None:
        """Map ``value`` to a placeholder built from others (an FQDN from its host and domain); not counted."""
        self._maps.setdefault(kind, {}).setdefault(value.lower(), placeholder)
        self.produced.add(placeholder.lower())
        self.originals.setdefault(value, (kind, placeholder))

    def known(self, kind: Kind, value: str) -> str | None:
        return self._maps.get(kind, {}).get(value.lower())

    def hit(self, kind: Kind, placeholder: str) -> None:
        """One occurrence of a value of ``kind`` replaced by ``placeholder``."""
        self.occurrences[kind] += 1
        self._used.setdefault(kind, set()).add(placeholder.lower())

    def counts(self) -> dict[str, tuple[int, int]]:
        """kind -> (distinct values, occurrences) actually replaced, for kinds replaced at all."""
        return {k: (len(self._used[k]), self.occurrences[k]) for k in KIND_LABELS if self.occurrences[k]}
