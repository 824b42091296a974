"""Rewrite a snapshot held in memory: every path, file, command, NVML result and manifest field
scrubbed of identifying values and redacted of secrets; serial numbers zeroed in binary files."""

from __future__ import annotations

import gzip
import json
import posixpath
import re

from rigaudit.tools.core.record import Record, field
from rigaudit.tools.pci import mask_vpd, zero_dsn
from rigaudit.tools.policy.secrets import is_secret
from rigaudit.tools.redact import (
    REDACTED,
    Tally,
    gunzip,
    redact_argv,
    redact_bytes,
    redact_json,
    redact_output,
    redact_text,
)
from rigaudit.tools.share._places import find
from rigaudit.tools.share._processes import ProcessCounts, Processes, needed_pids
from rigaudit.tools.share._pseudonyms import Pseudonyms
from rigaudit.tools.share._scrub import Scrubber
from rigaudit.tools.share._tree import Tree

IDENTITY_FILES = frozenset({"/etc/hostname", "/proc/sys/kernel/hostname", "/etc/mailname", "/etc/hosts"})
"""Files that write the host's name down: a host named like a program is replaced there too."""
IDENTITY_PROGRAMS = frozenset({"hostname", "uname", "hostnamectl"})
_SYSTEM = ("/sys/", "/dev/")


class Stats(Record, frozen=False):
    renamed: int = 0
    secrets: Tally = field(default_factory=Tally)
    """Values redacted while the bundle was made, by kind (:data:`rigaudit.tools.redact.KIND_LABELS`)."""
    recorded: int = 0
    """Values the snapshot already held redacted (``<redacted>``: redacted when it was recorded) that the bundle keeps
    (a marker in a process file the bundle leaves out goes with it)."""
    dsn_zeroed: int = 0
    vpd_masked: int = 0
    binary_left_out: int = 0
    """Binary files left out of the bundle: only those rigaudit reads (PCI configuration space, VPD) go in."""
    credential_files_left_out: int = 0
    """Files the read policy names as credentials (``/etc/ipsec.secrets``, ``~/.kaggle``): never in a bundle."""
    processes: ProcessCounts = field(default_factory=ProcessCounts)
    """Processes kept whole (serving, GPU, PID 1) and the others (program name only, no environment)."""
    unbounded: int = 0
    """Occurrences replaced by the final check (glued to other words, so no pattern saw them); also counted by kind."""
    warnings: list[str] = field(default_factory=list)

    @property
    def redacted(self) -> int:
        """Every secret redacted in the bundle: by it, and before it when the snapshot was recorded."""
        return self.secrets.total() - self.secrets["binary"] + self.recorded


def _markers(tree: Tree) -> int:
    """How many ``<redacted>`` the snapshot already holds."""
    marker = REDACTED.encode()
    count = sum(d.count(marker) for d in [*tree.files.values(), *tree.extras.values()])
    for record in [*tree.commands, *tree.nvml, tree.manifest]:
        count += json.dumps(record, ensure_ascii=False).count(REDACTED) if not isinstance(record, str) else record.count(REDACTED)
    return count


_BINARY_FORMATS = ("config", "vpd")
"""Binary files rigaudit reads under ``/sys`` (PCI configuration space, VPD): the only ones a bundle carries."""


def _unknown_binary(path: str, data: bytes) -> bool:
    """Whether ``data`` is a binary file (NUL bytes that are not NUL-separated text, not gzip or UTF-16)
    of a format rigaudit does not read: such a file is left out of a bundle (a key, a database)."""
    if path.startswith("/sys/") and posixpath.basename(path) in _BINARY_FORMATS:
        return False
    if b"\x00" not in data or data[:2] in (b"\x1f\x8b", b"\xff\xfe", b"\xfe\xff"):
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return not all(part.isprintable() for part in text.split("\x00"))


class Rewriter:
    def __init__(self, scrub: Scrubber, pseudonyms: Pseudonyms) -> None:
        self.scrub = scrub
        self.ps = pseudonyms
        self.stats = Stats()
        self.procs = Processes(set())

    # -- pieces ----------------------------------------------------------------------------

    def secret_text(self, text: str) -> str:
        """Redact secrets in free text, counting what was redacted."""
        return redact_text(text, self.stats.secrets)

    def places(self, source: str, text: str) -> str:
        """Host, container and user names replaced where they are written down (even common words)."""
        spans = sorted({m.span("v") for _, m in find(source, text)})
        if not spans:
            return text
        out, pos = [], 0
        for start, end in spans:
            if start < pos:
                continue
            out += [text[pos:start], self.scrub.text(text[start:end], identity=True)]
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def file(self, path: str, data: bytes) -> bytes:
        plain = gunzip(data)
        if plain is not None:  # a rotated log: its content rewritten, then packed again (what it held: masked, unseen)
            counted, self.stats.secrets = self.stats.secrets, Tally()
            inner = self.file(path.removesuffix(".gz"), plain)
            inside, self.stats.secrets = self.stats.secrets, counted
            self.stats.secrets.add("binary", inside.total())
            return data if inner == plain else gzip.compress(inner, mtime=0)
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
        text = redact_bytes(data, path, self.stats.secrets).decode("utf-8", "surrogateescape")
        text = self.places(path, text)
        text = self.scrub.text(text, system=path.startswith(_SYSTEM), identity=path in IDENTITY_FILES)
        return text.encode("utf-8", "surrogateescape")

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
        words: list[str] = []
        identity = False
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            identity = posixpath.basename(str(argv[0])) in IDENTITY_PROGRAMS
            words = [str(a) for a in argv]
            out["argv"] = [
                self.scrub.text(a)
                for a in self.places("cmd:argv", "\x00".join(redact_argv(words, self.stats.secrets))).split("\x00")
            ]
        source = f"cmd:{words[0] if words else ''}"
        for stream in ("stdout", "stderr"):
            if isinstance(record.get(stream), str):
                text = self.places(source, redact_output(words, str(record[stream]), self.stats.secrets))
                out[stream] = self.scrub.text(text, identity=identity)
        return out

    def nvml(self, record: dict[str, object] | str) -> dict[str, object] | str:
        if isinstance(record, str):
            return self.scrub.text(self.secret_text(record))
        out = dict(record)
        if "result" in record:
            out["result"] = self.json_value(redact_json(record["result"], self.stats.secrets))
        return out

    # -- the whole tree --------------------------------------------------------------------

    def _files(self, tree: Tree, out: Tree) -> None:
        """The files that go into the bundle, rewritten; binary files of other formats and credential files left out."""

        for path in sorted(tree.files):
            new_path = self.scrub.path(path)
            if new_path in out.files:
                self.stats.warnings.append(f"two files would share one name once scrubbed; one was left out ({new_path})")
                continue
            if _unknown_binary(path, tree.files[path]):
                self.stats.binary_left_out += 1
                continue
            if is_secret(posixpath.normpath(path)):
                self.stats.credential_files_left_out += 1
                self.stats.recorded -= tree.files[path].count(REDACTED.encode())
                continue
            data = self.procs.file(path, tree.files[path])
            if data is None:
                continue
            self.stats.renamed += new_path != path
            out.files[new_path] = self.file(path, data)

    def tree(self, tree: Tree) -> Tree:
        self.stats.recorded = _markers(tree)
        self.procs = Processes(needed_pids(tree.files, tree.nvml))
        self.stats.processes = self.procs.counts
        out = Tree(manifest={}, present=set(tree.present))
        self._files(tree, out)
        self.stats.recorded -= self.procs.counts.dropped_markers
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

        kinds = {v.lower(): k for v, (k, _) in self.ps.originals.items()}

        def sub(m: re.Match[str]) -> str:
            self.stats.unbounded += 1
            placeholder = lowered.get(m.group().lower(), m.group())
            self.ps.hit(kinds.get(m.group().lower(), "hostname"), placeholder)
            return placeholder

        return pattern.sub(sub, text)
