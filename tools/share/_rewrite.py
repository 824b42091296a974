"""Rewrite a snapshot held in memory: every path, file, command, NVML result and manifest field
scrubbed of identifying values and redacted of secrets; serial numbers zeroed in binary files."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from rigaudit.tools.redact import REDACTED, redact_cmdline, redact_file, redact_text
from rigaudit.tools.share._binary import mask_vpd, zero_dsn
from rigaudit.tools.share._pseudonyms import Pseudonyms
from rigaudit.tools.share._scrub import Scrubber
from rigaudit.tools.share._tree import Tree

IDENTITY_FILES = frozenset({"/etc/hostname", "/proc/sys/kernel/hostname", "/etc/mailname", "/etc/hosts"})
"""Files that write the host's name down: a host named like a program is replaced there too."""
IDENTITY_PROGRAMS = frozenset({"hostname", "uname", "hostnamectl"})
_TOKENS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"(?i)\b((?:Proxy-)?Authorization\s*[:=]\s*\"?(?:Bearer|Basic|Token)\s+)(?!<redacted>)[^\s\"',;]+"),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(?i)\b(Bearer\s+)(?!<redacted>)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
)
"""Tokens recognised by their shape, on top of :mod:`rigaudit.tools.redact`'s secret names."""
_SYSTEM = ("/sys/", "/dev/")


def redact_tokens(text: str) -> str:
    for pattern, replacement in _TOKENS:
        text = pattern.sub(replacement, text)
    return text


@dataclass
class Stats:
    renamed: int = 0
    secrets: int = 0
    dsn_zeroed: int = 0
    vpd_masked: int = 0
    unbounded: int = 0
    """Occurrences replaced by the final check (glued to other words, so no pattern saw them)."""
    warnings: list[str] = field(default_factory=list)


class Rewriter:
    def __init__(self, scrub: Scrubber, pseudonyms: Pseudonyms) -> None:
        self.scrub = scrub
        self.ps = pseudonyms
        self.stats = Stats()

    # -- pieces ----------------------------------------------------------------------------

    def secret_text(self, text: str) -> str:
        """Redact secrets in free text (names, options, tokens), counting what was redacted."""
        out = redact_tokens(redact_text(text))
        self.stats.secrets += max(0, out.count(REDACTED) - text.count(REDACTED))
        return out

    def file(self, path: str, data: bytes) -> bytes:
        name = posixpath.basename(path)
        if path.startswith("/sys/") and name == "config":
            zeroed = zero_dsn(data)
            if zeroed is not None:
                self.stats.dsn_zeroed += zeroed[1]
                return zeroed[0]
        if path.startswith("/sys/") and name == "vpd":
            out, masked = mask_vpd(data)
            self.stats.vpd_masked += masked
            return out
        redacted = redact_file(path, data)
        text = redact_tokens(redacted.decode("utf-8", "surrogateescape"))
        text = self.scrub.text(text, system=path.startswith(_SYSTEM), identity=path in IDENTITY_FILES)
        out = text.encode("utf-8", "surrogateescape")
        self.stats.secrets += max(0, out.count(REDACTED.encode()) - data.count(REDACTED.encode()))
        return out

    def json_value(self, value: object, *, identity: bool = False) -> object:
        if isinstance(value, str):
            return self.scrub.text(value, identity=identity)
        if isinstance(value, list):
            return [self.json_value(v, identity=identity) for v in value]
        if isinstance(value, dict):
            return {k: self.json_value(v, identity=identity) for k, v in value.items()}
        return value

    def command(self, record: dict[str, object] | str) -> dict[str, object] | str:
        if isinstance(record, str):
            return self.scrub.text(self.secret_text(record))
        out = dict(record)
        argv = record.get("argv")
        identity = False
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            identity = posixpath.basename(str(argv[0])) in IDENTITY_PROGRAMS
            block = redact_cmdline("\x00".join(str(a) for a in argv).encode("utf-8", "surrogateescape"))
            out["argv"] = [self.scrub.text(a) for a in block.decode("utf-8", "surrogateescape").split("\x00")]
        for stream in ("stdout", "stderr"):
            if isinstance(record.get(stream), str):
                out[stream] = self.scrub.text(self.secret_text(str(record[stream])), identity=identity)
        return out

    def nvml(self, record: dict[str, object] | str) -> dict[str, object] | str:
        if isinstance(record, str):
            return self.scrub.text(record)
        out = dict(record)
        if "result" in record:
            out["result"] = self.json_value(record["result"])
        return out

    # -- the whole tree --------------------------------------------------------------------

    def tree(self, tree: Tree) -> Tree:
        out = Tree(manifest={}, present=set(tree.present))
        for path in sorted(tree.files):
            new_path = self.scrub.path(path)
            if new_path in out.files:
                self.stats.warnings.append(f"two files would share one name once scrubbed; one was left out ({new_path})")
                continue
            self.stats.renamed += new_path != path
            out.files[new_path] = self.file(path, tree.files[path])
        out.links = {self.scrub.path(k): self.scrub.text(v, system=k.startswith(_SYSTEM)) for k, v in tree.links.items()}
        out.dirs = [self.scrub.path(d) for d in tree.dirs]
        out.unreadable = {self.scrub.path(k): v for k, v in tree.unreadable.items()}
        out.commands = [self.command(r) for r in tree.commands]
        out.nvml = [self.nvml(r) for r in tree.nvml]
        for name, data in sorted(tree.extras.items()):
            text = self.scrub.text(self.secret_text(data.decode("utf-8", "surrogateescape")), identity=True)
            out.extras[self.scrub.text(name, identity=True)] = text.encode("utf-8", "surrogateescape")
        manifest = dict(tree.manifest)
        if isinstance(manifest.get("notes"), str):
            manifest["notes"] = self.secret_text(str(manifest["notes"]))
        out.manifest = {k: self.json_value(v, identity=True) for k, v in manifest.items()}
        return out

    # -- the final check -------------------------------------------------------------------

    def leak_pattern(self, *, names: bool) -> re.Pattern[str] | None:
        """Every replaced value long enough to look for as a bare substring (host names only with ``names``)."""
        skip = self.scrub.contextual
        values = [
            v
            for v, (kind, _) in self.ps.originals.items()
            if len(v) >= 6
            and kind != "user"
            and '"' not in v
            and "\\" not in v
            and v.lower() not in skip
            and (names or kind not in ("hostname", "domain"))
        ]
        if not values:
            return None
        return re.compile("(?i:" + "|".join(re.escape(v) for v in sorted(values, key=lambda v: (-len(v), v))) + ")")

    def unbounded(self, text: str, pattern: re.Pattern[str] | None) -> str:
        """Replace what the word-bounded patterns could not see (``pve-gpu01_old``), counting it."""
        if pattern is None or not pattern.search(text):
            return text
        lowered = {v.lower(): p for v, (_, p) in self.ps.originals.items()}

        def sub(m: re.Match[str]) -> str:
            self.stats.unbounded += 1
            return lowered.get(m.group().lower(), m.group())

        return pattern.sub(sub, text)
