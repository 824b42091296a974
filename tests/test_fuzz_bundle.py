"""Fuzz: share bundles, damaged as bytes, crafted as archives (links, devices, names that climb out, huge
headers, gzip bombs) or with a damaged file inside; through `diff`, and an unpacked one through `audit`."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from rigaudit.tools.share import BundleError, share_bundle, unpack_bundle
from tests.conftest import FIXTURES
from tests.support.fuzz import Mutator, cases, check, run_cli

SMALL = FIXTURES / "h200x1-vm"
CASES = cases("bundle", 30)
MARKER = "FUZZ-CANARY-bundle-91d2"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    folder = tmp_path_factory.mktemp("bundle")
    share_bundle(SMALL, folder / "b.tar.gz")
    (folder / "secret").write_text(MARKER + "\n")
    return (folder / "b.tar.gz").read_bytes(), folder / "secret"


def _members(data: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    out = []
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as archive:
        for member in archive:
            handle = archive.extractfile(member)
            out.append((member, handle.read() if handle else None))
    return out


def _pack(members: list[tuple[tarfile.TarInfo, bytes | None]], *, size_lies: bool = False) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buffer.getvalue()
    return gzip.compress(raw[: len(raw) // 2] if size_lies else raw, compresslevel=1)


KINDS = ("symlink", "hardlink", "chr", "fifo", "absolute", "climb", "twice", "cut", "pax", "bomb", "file", "file")


def _crafted(kind: str, mutator: Mutator, original: bytes, secret: Path) -> tuple[str, bytes]:
    members = _members(original)
    folder = members[0][0].name.split("/")[0]
    info = tarfile.TarInfo(f"{folder}/files/proc/cmdline")
    data: bytes | None = None
    if kind == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, str(secret)
    elif kind == "hardlink":
        info.type, info.linkname = tarfile.LNKTYPE, str(secret)
    elif kind == "chr":
        info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 5
    elif kind == "fifo":
        info.type = tarfile.FIFOTYPE
    elif kind in ("absolute", "climb"):
        info.name = str(secret.parent / "evil") if kind == "absolute" else f"{folder}/../../evil"
        data = b"x"
        info.size = 1
    elif kind == "twice":
        info, data = members[1][0], members[1][1]
    elif kind == "cut":
        return kind, _pack(members, size_lies=True)
    elif kind == "pax":
        info.pax_headers = {"comment": "x" * 3_000_000}
        data, info.size = b"1\n", 2
    elif kind == "bomb":
        data = bytes(6 * 1024 * 1024)
        info.size = len(data)
    else:
        name = mutator.choice([m.name for m, d in members if d is not None and m.name.endswith((".json", ".jsonl"))])
        index = next(i for i, (m, _) in enumerate(members) if m.name == name)
        what, mutated = (
            mutator.jsonl(members[index][1] or b"") if name.endswith("l") else mutator.document(members[index][1] or b"")
        )
        members[index][0].size = len(mutated)
        members[index] = (members[index][0], mutated)
        return f"inside {name}: {what}", _pack(members)
    return kind, _pack([*members, (info, data)])


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_bundle(case: str, tmp_path: Path, bundle: tuple[bytes, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    original, secret = bundle
    monkeypatch.setattr("rigaudit.tools.share._unpack.MAX_BUNDLE_BYTES", 4 * 1024 * 1024)  # bombs stay cheap
    mutator = Mutator(case)
    number = int(case.split("#")[1])
    if number % 15 >= len(KINDS):
        what, data = mutator.bytes_(original)
    else:
        what, data = _crafted(KINDS[number % 15], mutator, original, secret)
    what = f"{case} {what}"
    path = tmp_path / "b.tar.gz"
    path.write_bytes(data)
    if " inside " not in what:  # the archive itself is damaged or crafted: diff must refuse it in one line
        outcome = run_cli(["diff", str(path), str(SMALL), "--json", str(tmp_path / "d.json")])
        check(outcome, what, canary=MARKER, written=tmp_path)
    else:  # a file of the snapshot is damaged: it unpacks, and the audit of it must hold
        try:
            root = unpack_bundle(path, tmp_path / "unpacked")
        except BundleError as exc:
            assert "\n" not in str(exc), what
        else:
            argv = ["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--areas", "gpu,pcie"]
            check(run_cli(argv), what, canary=MARKER, allowed=frozenset({0, 2, 4}), written=tmp_path)
    assert not (secret.parent / "evil").exists() and secret.read_text() == MARKER + "\n", what
