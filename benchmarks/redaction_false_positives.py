"""False positives of the redaction: what it replaces in snapshots that hold no secret.

Every vendored fixture under tests/fixtures (the seed, the 1x and 2x H200 hosts) is redacted as
each writer redacts it: every file's raw bytes (``redact_bytes`` by path), every command's argv and
output, every NVML result, the audit result's JSON and the transcript of that audit. None of these
snapshots holds a secret, so every value replaced is a false positive: each is printed, with its
kind, so a person can judge it. Then the planted corpus (tests/support/secrets_corpus.py) gives the
other side: how many of its secrets are caught, and how fast the whole snapshot is redacted.

    .venv/bin/python benchmarks/redaction_false_positives.py [--show N]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.audit.run import run_audit  # noqa: E402
from rigaudit.tools.hosts.snapshot import SnapshotHost  # noqa: E402
from rigaudit.tools.redact import Tally, redact_argv, redact_bytes, redact_json, redact_json_text, redact_output  # noqa: E402
from rigaudit.transcripts.reader import read_transcript  # noqa: E402
from rigaudit.transcripts.writer import TranscriptWriter  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def _changed(name: str, before: str, after: str, shown: list[str]) -> None:
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
            shown.append(f"  {name}: {line[:150]}")


def snapshot_pass(root: Path, tally: Tally, shown: list[str]) -> tuple[int, float]:
    """Redact one snapshot's files, commands and NVML results; return (bytes, seconds spent redacting)."""
    size, seconds = 0, 0.0
    for path in sorted((root / "files").rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            size += len(data)
            start = time.perf_counter()
            out = redact_bytes(data, "/" + path.relative_to(root / "files").as_posix(), tally)
            seconds += time.perf_counter() - start
            if out != data:
                _changed(path.name, data.decode("utf-8", "replace"), out.decode("utf-8", "replace"), shown)
    start = time.perf_counter()
    for name in ("commands.jsonl", "nvml.jsonl"):
        for line in (root / name).read_text().splitlines() if (root / name).exists() else []:
            record = json.loads(line)
            size += len(line)
            if name == "commands.jsonl":
                argv = record.get("argv") or []
                if redact_argv(argv, tally) != argv:
                    _changed("argv", " ".join(argv), " ".join(redact_argv(argv)), shown)
                for stream in ("stdout", "stderr"):
                    text = str(record.get(stream) or "")
                    out = redact_output(argv, text, tally)
                    if out != text:
                        _changed(" ".join(argv), text, out, shown)
            elif redact_json(record, tally) is not record:
                _changed("nvml", line, json.dumps(redact_json(record)), shown)
    return size, seconds + time.perf_counter() - start


def audit_pass(root: Path, tally: Tally, shown: list[str], ids: Tally) -> None:
    """The audit result's JSON and the transcript of the audit, redacted as their writers do (``ids`` counts the
    identifiers the transcript writes as digests: not secrets, and no false positives of redaction)."""
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "t.jsonl"
        with TranscriptWriter(transcript, redact=False) as writer:
            result = anyio.run(lambda: run_audit(SnapshotHost(root), emit=writer))
        text = result.model_dump_json(by_alias=True, indent=2)
        out = redact_json_text(text, tally)
        if out is not text:
            _changed("audit.json", text, json.dumps(json.loads(text), indent=2), shown)
        for event in read_transcript(transcript).events:
            data = event.model_dump(mode="json", by_alias=True)
            if redact_json(data, tally) is not data:
                _changed("transcript", json.dumps(data)[:2000], json.dumps(redact_json(data))[:2000], shown)
            redact_json(data, ids, ids=True)


def transcript_cost(root: Path, repeats: int = 3) -> tuple[float, float]:
    """The fastest of ``repeats`` audits of ``root`` written to a transcript, without and with redaction (s)."""
    best = {False: float("inf"), True: float("inf")}
    for redact in (False, True) * repeats:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            with TranscriptWriter(Path(tmp) / "t.jsonl", redact=redact) as writer:
                anyio.run(lambda: run_audit(SnapshotHost(root), emit=writer))
            best[redact] = min(best[redact], time.perf_counter() - start)
    return best[False], best[True]


def corpus_pass() -> None:
    from tests.support.mutate import light_copy
    from tests.support.secrets_corpus import plant

    with tempfile.TemporaryDirectory() as tmp:
        root = light_copy(FIXTURES / "seed-lxc-8x-rtxpro6000", Path(tmp) / "snap")
        planted = plant(root)
        tally = Tally()
        outputs = []
        for path in (root / "files").rglob("*"):
            if path.is_file():
                outputs.append(redact_bytes(path.read_bytes(), "/" + path.relative_to(root / "files").as_posix(), tally))
        for line in (root / "commands.jsonl").read_text().splitlines():
            record = json.loads(line)
            outputs.append(redact_output(record["argv"], str(record.get("stdout") or ""), tally).encode())
        everything = b"\n".join(outputs)
        caught = sum(s.value.encode() not in everything for s in planted.secrets)
        print(f"planted corpus: {caught} of {len(planted.secrets)} secrets redacted; {tally.total()} values redacted in all")
        print("  by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.items())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=40, metavar="N", help="print at most N changed lines per fixture")
    args = parser.parse_args()
    for root in sorted(p for p in FIXTURES.iterdir() if (p / "snapshot.json").is_file()):
        tally, shown, ids = Tally(), [], Tally()
        size, seconds = snapshot_pass(root, tally, shown)
        snapshot_total = tally.total()
        audit_pass(root, tally, shown, ids)
        print(
            f"{root.name}: {snapshot_total} values redacted in the snapshot ({size / 1e6:.1f} MB in {seconds:.2f} s, "
            f"{size / 1e6 / seconds:.1f} MB/s), {tally.total() - snapshot_total} in its audit JSON and transcript; "
            f"{ids['identifier']} identifiers written as digests in the transcript"
        )
        for line in shown[: args.show]:
            print(line)
    plain, redacted = transcript_cost(FIXTURES / "seed-lxc-8x-rtxpro6000")
    print(f"audit of the seed with its transcript: {plain:.2f} s unredacted, {redacted:.2f} s redacted")
    corpus_pass()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
