"""The corpus of secret shapes (tests/support/secrets_corpus.py) planted in a copy of the seed: each shape alone,
where it was planted, through the one redaction module."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rigaudit.tools.redact import REDACTED, Tally, redact_bytes, redact_output, redact_text
from tests.support.secrets_corpus import DOMAIN, Planted, Secret, plant

# -- each shape alone -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Planted]:
    from tests.support.diff import SEED
    from tests.support.mutate import light_copy

    root = light_copy(SEED, tmp_path_factory.mktemp("corpus") / "snap")
    return root, plant(root)


def test_the_corpus_has_more_than_fifty_secrets_of_every_kind(corpus: tuple[Path, Planted]) -> None:
    _, planted = corpus
    assert len(planted.secrets) >= 50
    assert len({s.value for s in planted.secrets}) == len(planted.secrets)  # each one can be told apart
    assert {s.where for s in planted.secrets} == {"env", "cmdline", "file", "log", "share"}


def _redacted_source(root: Path, secret: Secret, pid: int) -> bytes:
    """Every byte of the planted copy's files and commands, each redacted as its writer redacts it."""
    out = []
    for path in (root / "files").rglob("*"):
        if path.is_file():
            redacted = redact_bytes(path.read_bytes(), "/" + str(path.relative_to(root / "files")))
            out.append(gzip.decompress(redacted) if redacted[:2] == b"\x1f\x8b" else redacted)
    for line in (root / "commands.jsonl").read_text().splitlines():
        record = json.loads(line)
        out.append(redact_output(record["argv"], str(record.get("stdout") or "")).encode())
    return b"\n".join(out)


def test_no_planted_secret_survives_the_redaction_of_its_own_file(corpus: tuple[Path, Planted]) -> None:
    root, planted = corpus
    everything = _redacted_source(root, planted.secrets[0], planted.pid)
    forms = {
        s.name: (s.value.encode(), s.value.encode("utf-16-le"), s.value.encode().hex().upper().encode()) for s in planted.secrets
    }
    left = [name for name, encoded in forms.items() if any(f in everything for f in encoded)]
    assert left == []


def test_the_count_of_redacted_values_is_the_count_of_markers(corpus: tuple[Path, Planted]) -> None:
    root, _ = corpus
    for name in ("proc/4242/environ", "proc/4242/cmdline", "etc/modprobe.d/gpu-notes.conf", "home/alicewong/.aws/credentials"):
        data = (root / "files" / name).read_bytes()
        tally = Tally()
        out = redact_bytes(data, "/" + name, tally)
        assert out.count(REDACTED.encode()) == tally.total() > 0, name


def test_settings_the_checks_read_are_kept(corpus: tuple[Path, Planted]) -> None:
    root, planted = corpus
    environ = redact_bytes((root / f"files/proc/{planted.pid}/environ").read_bytes(), f"/proc/{planted.pid}/environ")
    kept = set(environ.split(b"\x00"))
    assert {b"NCCL_P2P_DISABLE=1", b"NCCL_DEBUG=WARN", b"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", b"MASTER_PORT=29500"} <= kept
    assert f"MASTER_ADDR=gpu-node-2.{DOMAIN}".encode() in kept  # a normal snapshot keeps host names (a bundle does not)
    assert b"HOME=" + REDACTED.encode() in kept and b"OPENAI_API_KEY=" + REDACTED.encode() in kept
    assert (
        redact_text("python3 -m sglang.launch_server --tp 8 --port 30000")
        == "python3 -m sglang.launch_server --tp 8 --port 30000"
    )
