"""``share_bundle``: a snapshot made safe to attach to a public bug report, as one ``.tar.gz``.

Host and domain names, container and VM names, serial numbers and asset tags, UUIDs (GPU, DMI
product, boot and file system ids), MAC, InfiniBand and IP addresses, user names and home folders
(in paths, log text and configs) are replaced by stable
placeholders (``_pseudonyms``), in file contents, file names, commands, NVML results and the
manifest; secrets are redacted (:mod:`rigaudit.tools.redact`, as when a snapshot is written: a
snapshot made elsewhere or by hand gets the same); serial numbers in PCI configuration space
(Device Serial Number) and VPD are zeroed. The archive holds one folder: the scrubbed snapshot,
whose ``SHARE.md`` opens with a summary block to paste into a support thread. It audits to the
same findings as the original (same check ids, statuses and severities).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tarfile
import tempfile
from datetime import datetime
from pathlib import Path

from rigaudit.tools.core.errors import OperationError
from rigaudit.tools.core.record import Record
from rigaudit.tools.core.version import rigaudit_version
from rigaudit.tools.redact import redact_text
from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import Finding
from rigaudit.tools.share._harvest import harvest
from rigaudit.tools.share._pseudonyms import Pseudonyms
from rigaudit.tools.share._rewrite import Rewriter, Stats
from rigaudit.tools.share._scrub import Scrubber
from rigaudit.tools.share._summary import light_facts, share_markdown, summary_block
from rigaudit.tools.share._tree import SHARE_NOTE, Tree, load_tree

_BINARY = re.compile(r"^files/sys/.*/(?:config|vpd)$")
_PATH_JSON = frozenset({"links.json", "dirs.json", "unreadable.json"})


class ShareError(OperationError):
    """The bundle cannot be written (not a snapshot, output refused...); the message is one line."""


class ShareSummary(Record):
    path: Path
    folder: str
    """The one folder inside the archive: the scrubbed snapshot."""
    files: int
    counts: dict[str, tuple[int, int]]
    """kind -> (distinct values replaced, occurrences replaced)."""
    stats: Stats
    block: str
    """The paste-ready summary block (also the top of SHARE.md)."""
    markdown: str
    warnings: tuple[str, ...] = ()

    def line(self) -> str:
        values = sum(v for v, _ in self.counts.values())
        hits = sum(h for _, h in self.counts.values())
        return (
            f"{self.files} files, {values} identifying values replaced ({hits} occurrences), "
            f"{self.stats.redacted} secrets redacted, {self.stats.dsn_zeroed} device serial numbers zeroed -> {self.path}"
        )


def _corpus(tree: Tree) -> str:
    """Everything the snapshot says, lower-cased: a placeholder found in it is never used."""
    parts = [d.decode("utf-8", "replace") for d in tree.files.values()]
    parts += [*tree.files, *tree.links, *tree.links.values(), *tree.dirs, *tree.unreadable]
    parts += [json.dumps(r, ensure_ascii=False) if isinstance(r, dict) else r for r in [*tree.commands, *tree.nvml]]
    parts += [json.dumps(tree.manifest, ensure_ascii=False), *(d.decode("utf-8", "replace") for d in tree.extras.values())]
    return "\n".join(parts).lower()


def _folder(out: Path, scrub: Scrubber) -> str:
    stem = out.name
    for suffix in (".tar.gz", ".tgz", ".gz", ".tar"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name = re.sub(r"[^A-Za-z0-9._-]", "_", scrub.text(stem, identity=True))
    return name if name and not name.startswith(".") else "rigaudit-share"


def _mtime(taken_at: object) -> int:
    try:
        return int(datetime.strptime(str(taken_at), "%Y-%m-%dT%H:%M:%SZ").timestamp())
    except ValueError:
        return 0


def _entries(tree: Tree) -> dict[str, bytes]:
    def dump(value: object) -> bytes:
        return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode()

    def lines(records: list[dict[str, object] | str]) -> bytes:
        return "".join((json.dumps(r, ensure_ascii=False) if isinstance(r, dict) else r) + "\n" for r in records).encode()

    out = {"snapshot.json": dump(tree.manifest)}
    for name, value in (("links.json", tree.links), ("dirs.json", sorted(tree.dirs)), ("unreadable.json", tree.unreadable)):
        if value or name in tree.present:
            out[name] = dump(value)
    if tree.commands or "commands.jsonl" in tree.present:
        out["commands.jsonl"] = lines(tree.commands)
    if tree.nvml or "nvml.jsonl" in tree.present:
        out["nvml.jsonl"] = lines(tree.nvml)
    out.update(tree.extras)
    out.update({"files" + path: data for path, data in tree.files.items()})
    return out


def _final_check(entries: dict[str, bytes], rewriter: Rewriter) -> None:
    """Replace any replaced value still present as bare text (glued to other words); binary files excepted."""
    with_names, without = rewriter.leak_pattern(names=True), rewriter.leak_pattern(names=False)
    for name, data in entries.items():
        if _BINARY.match(name):
            continue
        system = name.startswith(("files/sys/", "files/dev/")) or name in _PATH_JSON
        text = data.decode("utf-8", "surrogateescape")
        fixed = rewriter.unbounded(text, without if system else with_names)
        if fixed is not text:
            entries[name] = fixed.encode("utf-8", "surrogateescape")


def _manifest(data: bytes, counts: dict[str, tuple[int, int]], stats: Stats) -> bytes:
    """snapshot.json with what the bundle replaced and redacted, by kind (the true counts)."""
    manifest = json.loads(data)
    secrets = {kind: n for kind, n in sorted(stats.secrets.items()) if n and kind != "binary"}
    manifest["shared"] = {
        "by": f"rigaudit {rigaudit_version()}",
        "replaced": {kind: {"values": values, "occurrences": hits} for kind, (values, hits) in counts.items()},
        "redacted": {**secrets, "when_recorded": stats.recorded, "total": stats.redacted},
        "binary_tokens_masked": stats.secrets["binary"],
        "binary_files_left_out": stats.binary_left_out,
        "credential_files_left_out": stats.credential_files_left_out,
        "processes": {
            "kept": stats.processes.kept,
            "program_name_only": stats.processes.others,
            "environments_left_out": stats.processes.environments_left_out,
        },
        "device_serial_numbers_zeroed": stats.dsn_zeroed,
        "vpd_serial_numbers_masked": stats.vpd_masked,
    }
    return (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode()


def _scrubbed(findings: tuple[Finding, ...], scrub: Scrubber) -> list[Finding]:
    def one(f: Finding) -> Finding:
        subjects = tuple(redact_text(scrub.text(s)) for s in f.subjects)
        update = {
            "title": redact_text(scrub.text(f.title)),
            "observed": redact_text(scrub.text(f.observed)),
            "subjects": subjects,
        }
        return f.model_copy(update=update)

    return [one(f) for f in findings]


def _write(out: Path, folder: str, entries: dict[str, bytes], mtime: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=mtime) as packed,
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as archive,
        ):
            for directory in (folder, f"{folder}/files"):
                info = tarfile.TarInfo(directory)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
                archive.addfile(info)
            for name in sorted(entries):
                info = tarfile.TarInfo(f"{folder}/{name}")
                info.size, info.mode, info.mtime = len(entries[name]), 0o644, mtime
                archive.addfile(info, io.BytesIO(entries[name]))
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def share_bundle(
    snapshot_dir: Path | str, out_tar_gz: Path | str, *, audit: AuditResult | None = None, force: bool = False
) -> ShareSummary:
    """Write ``out_tar_gz`` from the snapshot ``snapshot_dir`` (atomically: a temporary file, renamed).

    ``audit`` is the audit result of the original snapshot: its baseline facts and problems go,
    scrubbed, into the summary (without it, facts are read from the snapshot and nothing is judged).
    Raises :class:`ShareError` with one line.
    """
    root, out = Path(snapshot_dir), Path(out_tar_gz)
    if out.is_dir():
        raise ShareError(f"{out}: is a directory; give the bundle's file name (bundle.tar.gz)")
    if out.exists() and not force:
        raise ShareError(f"{out}: exists (use --force to replace it)")
    try:
        tree = load_tree(root)
    except OSError as exc:
        raise ShareError(f"{root}: cannot read the snapshot: {exc.strerror or exc}") from None
    corpus = _corpus(tree)
    pseudonyms = Pseudonyms(taken=lambda placeholder: placeholder.lower() in corpus)
    scrub = Scrubber(pseudonyms, harvest(tree))
    rewriter = Rewriter(scrub, pseudonyms)
    clean = rewriter.tree(tree)
    folder = _folder(out, scrub)
    entries = _entries(clean)
    _final_check(entries, rewriter)
    counts = pseudonyms.counts()  # what the snapshot's files hold replaced, before the summary adds its own
    entries["snapshot.json"] = _manifest(entries["snapshot.json"], counts, rewriter.stats)
    facts = light_facts(clean)
    findings: list[Finding] | None = None
    if audit is not None:
        facts.update({k: redact_text(scrub.text(v, identity=True)) for k, v in audit.host.facts.items()})
        findings = _scrubbed(audit.findings, scrub)
    host = str(clean.manifest.get("hostname") or "?")
    taken_at = str(tree.manifest.get("taken_at") or "")
    block = summary_block(host=host, taken_at=taken_at, facts=facts, findings=findings, counts=counts, stats=rewriter.stats)
    block = rewriter.unbounded(block, rewriter.leak_pattern(names=True))
    archive = scrub.text(out.name, identity=True)
    markdown = share_markdown(block, counts=counts, stats=rewriter.stats, folder=folder, archive=archive)
    entries[SHARE_NOTE] = markdown.encode()
    try:
        _write(out, folder, entries, _mtime(tree.manifest.get("taken_at")))
    except OSError as exc:
        raise ShareError(f"{out}: cannot write the bundle: {exc.strerror or exc}") from None
    warnings = (*tree.warnings, *rewriter.stats.warnings)
    return ShareSummary(out, folder, len(clean.files), counts, rewriter.stats, block, markdown, warnings)
