"""Places where a host, container or user name is written down, whatever the name looks like.

Each place is a pattern whose group ``v`` is the name: the harvest collects the names found there
(so they are replaced wherever else they occur, as words), and the rewrite replaces them *at*
these places even when the name is also a common word (a container called ``sglang``, a host
called ``node1``, a user called ``gpu``), where elsewhere the word is kept.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator

from rigaudit.tools.core.record import Record
from rigaudit.tools.share._pseudonyms import Kind

PUBLIC_DOMAINS = frozenset(
    {
        "nvidia.com",
        "nvidia.cn",
        "nvcr.io",
        "ngc.nvidia.com",
        "github.com",
        "github.io",
        "githubusercontent.com",
        "gitlab.com",
        "huggingface.co",
        "hf.co",
        "pytorch.org",
        "python.org",
        "pypi.org",
        "pythonhosted.org",
        "readthedocs.io",
        "readthedocs.org",
        "anaconda.org",
        "anaconda.com",
        "conda.io",
        "ubuntu.com",
        "canonical.com",
        "launchpad.net",
        "debian.org",
        "proxmox.com",
        "redhat.com",
        "fedoraproject.org",
        "centos.org",
        "rockylinux.org",
        "almalinux.org",
        "archlinux.org",
        "kernel.org",
        "openai.com",
        "anthropic.com",
        "googleapis.com",
        "google.com",
        "amazonaws.com",
        "azure.com",
        "microsoft.com",
        "windows.net",
        "docker.com",
        "docker.io",
        "quay.io",
        "gcr.io",
        "ghcr.io",
        "k8s.io",
        "kubernetes.io",
        "vllm.ai",
        "sglang.ai",
        "npmjs.org",
        "npmjs.com",
        "sentry.io",
        "slack.com",
        "discord.com",
        "invalid",
        "w3.org",
        "schema.org",
        "apache.org",
        "gnu.org",
        "freedesktop.org",
        "systemd.io",
        "mellanox.com",
        "opencompute.org",
    }
)
"""Public services: their host names identify no one, and a bundle that names them stays readable."""
GENERIC_USERS = frozenset(
    {
        "root",
        "nobody",
        "daemon",
        "bin",
        "sys",
        "sync",
        "games",
        "man",
        "lp",
        "mail",
        "news",
        "uucp",
        "proxy",
        "www-data",
        "backup",
        "list",
        "irc",
        "gnats",
        "messagebus",
        "syslog",
        "_apt",
        "uuidd",
        "tcpdump",
        "sshd",
        "ntp",
        "chrony",
        "polkitd",
        "ubuntu",
        "debian",
        "admin",
        "user",
        "ec2-user",
        "centos",
        "cloud-user",
        "git",
        "invalid",
    }
)


def public(host: str) -> bool:
    lowered = host.lower().rstrip(".")
    return any(lowered == d or lowered.endswith("." + d) for d in PUBLIC_DOMAINS)


class Place(Record):
    kind: Kind
    pattern: re.Pattern[str]
    where: Callable[[str], bool]
    """Which sources hold this place: a file path, or ``cmd:PROGRAM`` for a command's output."""
    strict: bool = False
    """Only names that look like host names (a dot, a digit or a hyphen): the place is also used for other values."""


def _any(_source: str) -> bool:
    return True


def _config(source: str) -> bool:
    """Configuration and process files, not package metadata and documentation (which name public hosts)."""
    return not (
        source.startswith(("/usr/share/", "/usr/lib/", "/sys/", "/proc/driver/", "/lib/", "/snap/"))
        or any(part in source for part in ("/site-packages/", "/dist-packages/", ".dist-info/", ".egg-info/"))
    )


def _pve(source: str) -> bool:
    return source.startswith("/etc/pve/") and source.endswith(".conf")


def _program(*names: str) -> Callable[[str], bool]:
    return lambda source: source.startswith("cmd:") and posixpath.basename(source[4:]) in names


_URL = r"(?:[a-z][a-z0-9+.-]{1,20}://)?(?:[^\s@/\"'<>]*@)?"
_HOST = r"(?P<v>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
_STAMP = r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
PLACES: tuple[Place, ...] = (
    Place("hostname", re.compile(r"(?:Set hostname to|Hostname set to) <(?P<v>[^>\s]+)>"), _any),
    Place("hostname", re.compile(rf"(?m)^{_STAMP} (?P<v>[A-Za-z0-9][\w.-]*) (?=[\w./@-]+(?:\[\d+\])?:)"), _any),
    Place(
        "hostname",
        re.compile(rf"(?<![\w])(?:[A-Z0-9_]*_)?(?:ADDR|ADDRESS|HOST|HOSTNAME|SERVER|ENDPOINT)=[\"']?{_URL}{_HOST}"),
        _config,
        strict=True,
    ),
    Place(
        "hostname",
        re.compile(rf"(?<![\w-])--[\w-]*(?:host|addr|address|endpoint|server|master)[\w-]*[= \x00][\"']?{_URL}{_HOST}"),
        _config,
        strict=True,
    ),
    Place("hostname", re.compile(rf"(?i)\b[a-z][a-z0-9+.-]{{1,20}}://(?:[^\s@/\"'<>]*@)?{_HOST}"), _config, strict=True),
    Place("hostname", re.compile(r"\bnfs: server (?P<v>[A-Za-z0-9][\w.-]*) (?:not responding|OK)"), _any),
    Place("hostname", re.compile(r"(?m)^(?P<v>[A-Za-z0-9][\w.-]*):/\S* \S+ nfs4?\b"), _any),
    Place("container", re.compile(r"(?m)^(?:hostname|name):[ \t]*(?P<v>[\w.-]+)[ \t]*$"), _pve),
    Place("container", re.compile(r"(?m)^lxc\.uts\.name[ \t]*=[ \t]*(?P<v>[\w.-]+)"), _any),
    Place("container", re.compile(r"(?<![\w-])--(?:name|hostname)[= \x00](?P<v>[A-Za-z0-9][\w.-]*)"), _config),
    Place("container", re.compile(r"(?m)^[ \t]*\d+[ \t]+\S+(?:[ \t]+\S+)?[ \t]+(?P<v>[\w.-]+)[ \t]*$"), _program("pct")),
    Place("container", re.compile(r"(?m)^[ \t]*\d+[ \t]+(?P<v>[\w.-]+)[ \t]+(?:running|stopped|paused)\b"), _program("qm")),
    Place(
        "container",
        re.compile(r"(?m)^[0-9a-f]{12}[ \t].*[ \t](?P<v>[A-Za-z0-9][\w.-]*)[ \t]*$"),
        _program("docker", "podman", "nerdctl"),
    ),
    Place("user", re.compile(r"/home/(?P<v>[A-Za-z0-9_][A-Za-z0-9._-]*)"), _any),
    Place("user", re.compile(r"(?<![A-Za-z0-9_])(?:USER|LOGNAME|SUDO_USER|USERNAME)=(?P<v>[A-Za-z0-9_][A-Za-z0-9._-]*)"), _any),
    Place(
        "user",
        re.compile(
            r"(?:\bfor user |\bAccepted \S+ for |\bFailed password for (?:invalid user )?|\bsudo:\s+|\buid=\d+\()"
            r"(?P<v>[A-Za-z_][\w.-]*)"
        ),
        _any,
    ),
    Place("user", re.compile(r"(?im)^[ \t]*(?:User|user|username|login)[ \t]*[:=][ \t]*[\"']?(?P<v>[A-Za-z_][\w.-]*)"), _config),
)


def find(source: str, text: str) -> Iterator[tuple[Place, re.Match[str]]]:
    """Every place in ``text`` (of a file path, or ``cmd:PROGRAM``), with its match."""
    for place in PLACES:
        if place.where(source):
            for match in place.pattern.finditer(text):
                yield place, match


def passwd_users(text: str) -> list[str]:
    """Accounts of people in /etc/passwd (uid 1000 and up, not nobody)."""
    users = []
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) >= 3 and fields[2].isdecimal() and 1000 <= int(fields[2]) < 60000:
            users.append(fields[0])
    return users


def ps_users(text: str) -> list[str]:
    """The USER column of ``ps`` output (when its header names one)."""
    lines = text.splitlines()
    if not lines or not lines[0].split() or lines[0].split()[0] not in ("USER", "UID", "RUSER", "EUSER"):
        return []
    return [line.split()[0] for line in lines[1:] if line.split() and not line.split()[0].isdigit()]
