"""Find the identifying values that no pattern recognises by their shape: host and domain names,
container and user names, serial numbers and asset tags, machine ids; and the order GPUs are
numbered in. Host, container and user names are read where they are written down (``_places``).

UUIDs, MAC and IP addresses and home folders are recognised by their shape wherever they are
(see ``_scrub``); this pass only reads the places where the others are written down. The shapes and the
places of serial numbers and machine ids are those :mod:`rigaudit.tools.redact` digests for models and
transcripts (one list).
"""

from __future__ import annotations

import ipaddress
import posixpath
import re

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.redact import DMI_SERIALS, JUNK_SERIALS, MACHINE_ID, SERIAL_PHRASES, UUID
from rigaudit.tools.share._places import GENERIC_USERS, find, passwd_users, ps_users, public
from rigaudit.tools.share._tree import Tree

GENERIC_HOSTS = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localdomain",
        "(none)",
        "none",
        "unknown",
        "ubuntu",
        "debian",
        "pve",
        "proxmox",
        "fedora",
        "centos",
        "rocky",
        "almalinux",
        "rhel",
        "archlinux",
        "raspberrypi",
        "linux",
        "host",
        "server",
        "node",
        "gpu",
        "broadcasthost",
    }
)
GENERIC_DOMAINS = frozenset({"localdomain", "local", "lan", "home", "internal", "localhost", "home.arpa", "(none)", "none"})
SOFTWARE = frozenset(
    {"vllm", "sglang", "triton", "tritonserver", "ollama", "tgi", "llama", "tensorrt", "trtllm", "nim", "python", "python3"}
)
"""Words too common on inference hosts to replace wherever they occur, even when a host is named so."""
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*$")
_UUID = re.compile(UUID)
_GPU_UUID = re.compile(rf"GPU-({UUID})")
_HOSTNAMECTL = re.compile(r"^\s*(?:Static|Transient) hostname:\s*(\S+)\s*$", re.M)


class Harvest(Record, frozen=False):
    hostnames: list[str] = field(default_factory=list)
    """Short host names, the snapshot's own first."""
    contextual: set[str] = field(default_factory=set)
    """Host names that are also common words (short, a program, a system path's part): replaced only
    where a host name is written down, not wherever the word occurs."""
    fqdns: list[tuple[str, str, str]] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    serials: list[str] = field(default_factory=list)
    machine_ids: list[str] = field(default_factory=list)
    gpu_uuids: list[str] = field(default_factory=list)
    """Bare, lower-case, in NVML index order, then by PCI address."""
    efi_guids: set[str] = field(default_factory=set)
    """Vendor GUIDs of EFI variable names: the same on every machine, kept (rules name them)."""
    containers: list[str] = field(default_factory=list)
    """Names of containers and VMs (LXC ``hostname:``, ``pct list``, ``--name``)."""
    users: list[str] = field(default_factory=list)

    def _add(self, bucket: list[str], value: str) -> None:
        if value.lower() not in (v.lower() for v in bucket):
            bucket.append(value)

    def add_hostname(self, raw: str) -> None:
        name = raw.strip().rstrip(".")
        if not _NAME.match(name) or name.lower() in GENERIC_HOSTS or _is_ip(name):
            return
        short, _, domain = name.partition(".")
        if len(short) >= 2 and short.lower() not in GENERIC_HOSTS and not short.isdigit():
            self._add(self.hostnames, short)
        if domain:
            self.add_domain(domain)
            if all(name.lower() != f.lower() for f, _, _ in self.fqdns):
                self.fqdns.append((name, short, domain))

    def add_container(self, raw: str) -> None:
        name = raw.strip()
        if _NAME.match(name) and name.lower() not in GENERIC_HOSTS and not name.isdigit() and len(name) >= 2:
            self._add(self.containers, name)

    def add_user(self, raw: str) -> None:
        name = raw.strip()
        person = re.fullmatch(r"[A-Za-z_][\w.-]{1,31}", name) and not name.startswith("systemd-")
        if person and name.lower() not in GENERIC_USERS and name not in self.users:
            self.users.append(name)

    def add_domain(self, raw: str) -> None:
        domain = raw.strip().rstrip(".")
        if "." in domain and _NAME.match(domain) and domain.lower() not in GENERIC_DOMAINS:
            self._add(self.domains, domain)

    def add_serial(self, raw: str, *, need_digit: bool = True) -> None:
        value = raw.strip()
        if len(value) < 4 or value.lower() in JUNK_SERIALS or len(set(value.replace("-", ""))) <= 1:
            return
        if need_digit and not any(c.isdigit() for c in value):
            return
        self._add(self.serials, value)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _first_line(data: bytes) -> str:
    return next((line.strip() for line in _text(data).splitlines() if line.strip() and not line.startswith("#")), "")


_SYSTEM_TREES = ("/proc/", "/sys/", "/dev/", "/usr/", "/lib/", "/lib64/", "/opt/", "/bin/", "/sbin/")


def _common_words(tree: Tree) -> set[str]:
    """Words the system itself uses: programs that run, components of system paths (``/proc/sys/vm``).
    A host named like one of them (``vm``, ``sglang``) keeps them readable."""
    words = set(SOFTWARE)
    for path in [*tree.files, *tree.dirs, *tree.links, *tree.unreadable]:
        if path.startswith(_SYSTEM_TREES):
            words.update(part.lower() for part in path.split("/") if part)
    for path, data in tree.files.items():
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "proc" or not parts[2].isdigit():
            continue
        if parts[3] == "comm":
            words.add(_text(data).strip().lower())
        elif parts[3] == "cmdline":
            for arg in _text(data).split("\x00")[:3]:
                words.update(w.lower() for w in re.split(r"[/.=:\s]+", arg) if w)
    return words


def _commands(tree: Tree, harvest: Harvest) -> None:
    for record in tree.command_records():
        argv = record.get("argv")
        stdout = str(record.get("stdout") or "")
        if not isinstance(argv, list) or not argv or not stdout:
            continue
        program = posixpath.basename(str(argv[0]))
        if program == "hostname" or (program == "uname" and argv[1:] in (["-n"], ["--nodename"])):
            harvest.add_hostname(stdout.split(maxsplit=1)[0] if stdout.split() else "")
        elif program == "uname" and any(a in ("-a", "--all") for a in argv[1:]) and len(stdout.split()) > 1:
            harvest.add_hostname(stdout.split()[1])
        elif program == "hostnamectl":
            for name in _HOSTNAMECTL.findall(stdout):
                harvest.add_hostname(name)


def _nvml(tree: Tree, harvest: Harvest) -> None:
    records = sorted(tree.nvml_records(), key=lambda r: str(r.get("args")))
    for record in records:
        fn, result = str(record.get("fn") or ""), record.get("result")
        if fn == "nvmlDeviceGetUUID" and isinstance(result, str):
            for uuid in _GPU_UUID.findall(result):
                harvest._add(harvest.gpu_uuids, uuid.lower())
        if "Serial" in fn and isinstance(result, str):
            harvest.add_serial(result, need_digit=False)
        if isinstance(result, dict):
            for key, value in result.items():
                if "serial" in str(key).lower() and isinstance(value, str):
                    harvest.add_serial(value, need_digit=False)


def _files(tree: Tree, harvest: Harvest) -> None:
    for path in ("/etc/hostname", "/proc/sys/kernel/hostname", "/etc/mailname"):
        if path in tree.files:
            harvest.add_hostname(_first_line(tree.files[path]))
    if "/proc/sys/kernel/domainname" in tree.files:
        harvest.add_domain(_first_line(tree.files["/proc/sys/kernel/domainname"]))
    for line in _text(tree.files.get("/etc/resolv.conf", b"")).splitlines():
        words = line.split()
        if words and words[0] in ("search", "domain"):
            for domain in words[1:]:
                harvest.add_domain(domain)
    for path in sorted(tree.files):
        if path.startswith("/proc/driver/nvidia/gpus/"):
            for uuid in _GPU_UUID.findall(_text(tree.files[path])):
                harvest._add(harvest.gpu_uuids, uuid.lower())
        name = posixpath.basename(path)
        if ("/dmi/id/" in path and name in DMI_SERIALS) or (path.startswith("/sys/") and name == "serial"):
            harvest.add_serial(_first_line(tree.files[path]), need_digit=False)
        elif name == "machine-id" and MACHINE_ID.match(_first_line(tree.files[path])):
            harvest._add(harvest.machine_ids, _first_line(tree.files[path]))


def _hosts_file(tree: Tree, harvest: Harvest) -> None:
    """Every name in /etc/hosts: this host's and its neighbours' (internal names all)."""
    for line in _text(tree.files.get("/etc/hosts", b"")).splitlines():
        words = line.split("#", 1)[0].split()
        for name in words[1:]:
            if not name.lower().startswith("ip6-"):
                harvest.add_hostname(name)


def _sources(tree: Tree) -> list[tuple[str, str]]:
    """(source, text) of every text: files by path, command output as ``cmd:PROGRAM``."""
    out = [(p, _text(d)) for p, d in tree.files.items() if not p.endswith("/config")]
    for record in tree.command_records():
        argv = record.get("argv")
        program = str(argv[0]) if isinstance(argv, list) and argv else ""
        out.append((f"cmd:{program}", str(record.get("stdout") or "") + str(record.get("stderr") or "")))
        if isinstance(argv, list):
            out.append(("cmd:argv", " ".join(str(a) for a in argv)))
    return out


def _places(tree: Tree, harvest: Harvest) -> None:
    for source, text in _sources(tree):
        for place, match in find(source, text):
            value = match.group("v")
            if place.kind == "container":
                harvest.add_container(value)
            elif place.kind == "user":
                harvest.add_user(value)
            elif not public(value) and (not place.strict or re.search(r"[.\d-]", value)):
                harvest.add_hostname(value)
        if source == "/etc/passwd":
            for user in passwd_users(text):
                harvest.add_user(user)
        elif source.startswith("cmd:") and posixpath.basename(source[4:]) == "ps":
            for user in ps_users(text):
                harvest.add_user(user)


def _texts(tree: Tree) -> list[str]:
    out = [_text(d) for p, d in tree.files.items() if not p.endswith("/config")]
    for record in tree.command_records():
        out.extend((str(record.get("stdout") or ""), str(record.get("stderr") or "")))
    return out


def _efi(tree: Tree, harvest: Harvest) -> None:
    for path in [*tree.files, *tree.unreadable, *tree.dirs, *tree.links]:
        if path.startswith("/sys/firmware/efi/"):
            harvest.efi_guids.update(u.lower() for u in _UUID.findall(path))


def harvest(tree: Tree) -> Harvest:
    """Every identifying value this snapshot writes down by name, in a stable order."""
    found = Harvest()
    found.add_hostname(str(tree.manifest.get("hostname") or ""))
    _nvml(tree, found)  # first: GPU UUIDs and serial numbers are numbered in NVML index order
    _files(tree, found)
    _commands(tree, found)
    _places(tree, found)
    for text in _texts(tree):
        for pattern in SERIAL_PHRASES:
            for value in pattern.findall(text):
                found.add_serial(value)
    _hosts_file(tree, found)
    _efi(tree, found)
    common = _common_words(tree)
    names = [*found.hostnames, *found.containers, *found.users]
    found.contextual = {h.lower() for h in names if len(h) < 4 or h.lower() in common}
    return found
