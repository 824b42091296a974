"""Replace identifying values in text, in one pass, by stable placeholders.

Known values (host, domain, container and user names, serial numbers, machine ids: see
``_harvest``) are matched as whole words, and so is any name under a known domain
(``mail.corp.example.com``) or with an internal suffix (``tempo.monitoring.svc.cluster.local``);
UUIDs, MAC and InfiniBand addresses, IPv4 and IPv6 addresses, e-mail addresses, ``/home/NAME`` and
``USER=NAME`` by their shape. Values that identify nothing are kept: loopback and unspecified
addresses, netmasks, multicast and broadcast addresses, all-zero UUIDs and EFI vendor GUIDs.
Host names are not replaced in /sys and /dev, nor in /proc paths (kernel objects such as ``node1``
or ``vm`` would be renamed with them), and a host named like a common word (short, a program that
runs on it, a part of a system path: ``vm``, ``sglang``) only where a host name is written down
(``identity`` sources: /etc/hostname, ``uname -a``..., and ``HOSTNAME=``).
"""

from __future__ import annotations

import ipaddress
import re

from rigaudit.tools.redact import ANY_UUID, GPU_UUID, GUID, IB_ADDRESS, MAC
from rigaudit.tools.share._harvest import Harvest
from rigaudit.tools.share._places import GENERIC_USERS, public
from rigaudit.tools.share._pseudonyms import Kind, Pseudonyms

_HEX = "[0-9A-Fa-f]"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_INTERNAL = "local|lan|internal|corp|intranet|localdomain|private|intra|svc"
_TLDS = (
    "com|net|org|io|ai|dev|co|edu|gov|mil|info|biz|cloud|app|tech|us|uk|de|fr|nl|se|ch|jp|cn|in|eu|ca|au|ru|br|kr|it|es"
    "|pl|cz|at|be|dk|fi|no|il|sg|hk|tw|" + _INTERNAL
)
_SHAPES = (
    rf"(?P<gpu>{GPU_UUID})",
    rf"(?P<uuid>{ANY_UUID})",
    rf"(?P<ib>{IB_ADDRESS})",
    rf"(?P<mac>{MAC})",
    rf"(?P<guid>{GUID})",
    r"(?P<ip4>(?<![\w.-])(?:\d{1,3}\.){3}\d{1,3}(?![\w-]|\.\d))",
    rf"(?P<ip6>(?<![\w:.])(?:{_HEX}{{0,4}}:){{2,7}}{_HEX}{{0,4}}(?![\w:.]))",
    r"(?P<home>/home/)(?P<user>[A-Za-z0-9_][A-Za-z0-9._-]*)",
    r"(?P<uvar>(?<![A-Za-z0-9_])(?:USER|LOGNAME|SUDO_USER|USERNAME)=)(?P<uval>[A-Za-z0-9_][A-Za-z0-9._-]*)",
    r"(?P<hvar>(?<![A-Za-z0-9_])HOSTNAME=|Set hostname to <|Hostname set to <)(?P<hval>[A-Za-z0-9][A-Za-z0-9.-]*)",
    rf"(?P<itld>(?<![\w.-]){_LABEL}(?:\.{_LABEL})+\.(?:{_INTERNAL})(?![\w-]|\.[A-Za-z0-9]))",
)
_EMAIL = rf"(?P<email>(?<![\w.+%-])(?P<local>[A-Za-z0-9._%+-]+)@(?P<edomain>(?:{_LABEL}\.)+(?:{_TLDS}))(?![\w-]|\.[A-Za-z0-9]))"
_TRIGGER = re.compile(r"[:.=@-]|/home/")
"""Every shape holds one of these: text without any (most sysfs values) needs only the known words."""
_KEEP_V4 = frozenset({"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "169.254.169.254"})
_NAMES: tuple[Kind, ...] = ("hostname", "domain", "container", "user")


def _netmask(address: ipaddress.IPv4Address) -> bool:
    bits = int(address)
    inverted = ~bits & 0xFFFFFFFF
    return bits != 0 and inverted & (inverted + 1) == 0


class Scrubber:
    """One bundle's text scrubber: ``text(s)`` returns ``s`` with every identifying value replaced."""

    def __init__(self, pseudonyms: Pseudonyms, found: Harvest) -> None:
        self.ps = pseudonyms
        self.efi = found.efi_guids
        self.contextual = found.contextual
        self._literals: dict[str, tuple[Kind, str]] = {}
        self._fqdns: set[str] = set()
        for name in found.hostnames:
            self._literals[name.lower()] = ("hostname", pseudonyms.placeholder("hostname", name))
        for domain in found.domains:
            self._literals[domain.lower()] = ("domain", pseudonyms.placeholder("domain", domain))
        for fqdn, short, domain in found.fqdns:
            host = self._literals.get(short.lower(), ("hostname", short))[1]
            dom = self._literals.get(domain.lower(), ("domain", domain))[1]
            pseudonyms.assign("hostname", fqdn, f"{host}.{dom}")
            self._literals[fqdn.lower()] = ("hostname", f"{host}.{dom}")
            self._fqdns.add(fqdn.lower())
        for container in found.containers:
            self._literals.setdefault(container.lower(), ("container", pseudonyms.placeholder("container", container)))
        for user in found.users:
            self._literals.setdefault(user.lower(), ("user", pseudonyms.placeholder("user", user, key=user)))
        for uuid in found.gpu_uuids:
            pseudonyms.placeholder("gpu_uuid", uuid)
        for serial in found.serials:
            style = "dsn" if re.fullmatch(r"[0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){7}", serial) else None
            self._literals[serial.lower()] = ("serial", pseudonyms.placeholder("serial", serial, style))
        for machine_id in found.machine_ids:
            self._literals[machine_id.lower()] = ("machine_id", pseudonyms.placeholder("machine_id", machine_id))
        parts = [_EMAIL]
        self._words: re.Pattern[str] | None = None
        if self._literals:
            words = "|".join(re.escape(w) for w in sorted(self._literals, key=lambda w: (-len(w), w)))
            parts.append(rf"(?P<lit>(?<![A-Za-z0-9_])(?i:{words})(?![A-Za-z0-9_]))")
            self._words = re.compile(rf"(?i:{words})")
        self._domains = sorted(found.domains, key=len, reverse=True)
        if self._domains:
            suffixes = "|".join(re.escape(d) for d in self._domains)
            parts.append(rf"(?P<sub>(?<![\w.-])(?:{_LABEL}\.)+(?i:{suffixes})(?![\w-]|\.[A-Za-z0-9]))")
        self._pattern = re.compile("|".join([*parts, *_SHAPES]))

    def text(self, text: str, *, system: bool = False, identity: bool = False) -> str:
        """``system``: a /sys or /dev path or value (host names kept); ``identity``: a place a host name is written down."""
        if not _TRIGGER.search(text) and (self._words is None or not self._words.search(text)):
            return text
        return self._pattern.sub(lambda m: self._replace(m, system, identity), text)

    def path(self, path: str) -> str:
        """A path: host names are kept in kernel object paths (/proc, /sys, /dev), where none are."""
        return self.text(path, system=path.startswith(("/proc/", "/sys/", "/dev/")))

    # -- one match ---------------------------------------------------------------------------

    def _replace(self, m: re.Match[str], system: bool, identity: bool) -> str:
        value = m.group()
        kind = m.lastgroup
        named = m.group("user") or m.group("uval") or m.group("hval") or (value[4:] if kind == "gpu" else value)
        if value.lower() in self.ps.produced or named.lower() in self.ps.produced:
            return value  # a placeholder: this text was scrubbed already
        if kind == "lit":
            found_kind, placeholder = self._literals[value.lower()]
            if found_kind in _NAMES and (system or (value.lower() in self.contextual and not identity)):
                return value
            if value.lower() in self._fqdns:
                self.ps.hit("domain", placeholder.split(".", 1)[1])
            return self._hit(found_kind, placeholder)
        if kind == "gpu":
            return value[:4] + self._hit("gpu_uuid", self.ps.placeholder("gpu_uuid", value[4:].lower()))
        if kind == "uuid":
            return self._uuid(value)
        if kind in ("ib", "mac", "guid"):
            return self._hardware(kind, value)
        if kind == "ip4":
            return self._ipv4(value)
        if kind == "ip6":
            return self._ipv6(value)
        if kind == "user":
            return "/home/" + self._hit("user", self.ps.placeholder("user", m.group("user"), key=m.group("user")))
        if kind == "hval":
            found = self._literals.get(m.group("hval").lower())
            if found is None or found[0] != "hostname":
                return value
            return m.group("hvar") + self._hit("hostname", found[1])
        if kind == "sub":
            domain = next(d for d in self._domains if value.lower().endswith("." + d.lower()))
            return self._fqdn(value, value[: -len(domain) - 1], domain)
        if kind == "itld":
            first, _, rest = value.partition(".")
            return self._fqdn(value, first, rest)
        if kind == "email":
            return self._email(m)
        if kind == "uval":
            name = m.group("uval")
            return value if name == "root" else m.group("uvar") + self._hit("user", self.ps.placeholder("user", name, key=name))
        return value

    def _fqdn(self, value: str, host: str, domain: str) -> str:
        """A name under a domain: its host part and its domain replaced apart (``host-3.domain-1.invalid``)."""
        known = self._literals.get(domain.lower())
        dom = known[1] if known else self.ps.placeholder("domain", domain)
        placeholder = f"{self.ps.placeholder('hostname', host)}.{dom}"
        self.ps.assign("hostname", value, placeholder)
        self.ps.hit("domain", dom)
        return self._hit("hostname", placeholder)

    def _email(self, m: re.Match[str]) -> str:
        local, domain = m.group("local"), m.group("edomain")
        if public(domain) or local.lower() in GENERIC_USERS:
            return m.group()
        known = self._literals.get(domain.lower())
        dom = self._hit("domain", known[1] if known else self.ps.placeholder("domain", domain))
        return f"{self._hit('user', self.ps.placeholder('user', local, key=local))}@{dom}"

    def _hit(self, kind: Kind, placeholder: str) -> str:
        self.ps.hit(kind, placeholder)
        return placeholder

    def _uuid(self, value: str) -> str:
        key = value.lower()
        if key in self.efi or set(key) <= {"0", "-"} or set(key) <= {"f", "-"}:
            return value
        known = self.ps.known("gpu_uuid", key)
        if known is not None:
            return self._hit("gpu_uuid", known)
        return self._hit("uuid", self.ps.placeholder("uuid", key))

    def _hardware(self, kind: str, value: str) -> str:
        key = value.lower()
        digits = set(key) - {":"}
        if digits <= {"0"} or digits <= {"f"}:
            return value
        if kind == "mac":
            return value if int(key[:2], 16) & 1 else self._hit("mac", self.ps.placeholder("mac", key))
        if kind == "guid":
            return self._hit("mac", self.ps.placeholder("mac", key, "guid"))
        prefix, guid = key[:35], key[36:]  # flags and queue pair, subnet prefix (12 bytes), then the port GUID
        if key[3:11] == "ff:ff:ff" or set(guid) - {":"} <= {"0"} or set(guid) - {":"} <= {"f"}:
            return value  # the broadcast address (queue pair 0xffffff), or no GUID
        return prefix + ":" + self._hit("mac", self.ps.placeholder("mac", guid, "ibguid"))

    def _ipv4(self, value: str) -> str:
        try:
            address = ipaddress.IPv4Address(value)
        except ValueError:
            return value
        special = address.is_loopback or address.is_multicast or address.is_reserved or address.is_unspecified
        if special or value in _KEEP_V4 or _netmask(address) or value.startswith("0."):
            return value
        return self._hit("ip", self.ps.placeholder("ip", value, key=value))

    def _ipv6(self, value: str) -> str:
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            return value
        if value.count(":") < 3 or address.is_loopback or address.is_unspecified or address.is_multicast:
            return value
        style = "ipv6_link" if address.is_link_local else "ipv6"
        return self._hit("ip", self.ps.placeholder("ip", value, style, key=address.compressed))
