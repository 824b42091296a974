"""Crafted archives shared by tests and benchmarks."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def gzip_bomb(path: Path, size: int, *, compresslevel: int = 1) -> None:
    """A share bundle whose one member inflates to ``size`` zero bytes (a small fraction of that on disk)."""
    info = tarfile.TarInfo("snap/files/big")
    info.size = size
    with gzip.open(path, "wb", compresslevel=compresslevel) as packed, tarfile.open(fileobj=packed, mode="w|") as archive:
        archive.addfile(tarfile.TarInfo("snap/snapshot.json"), io.BytesIO(b""))
        archive.addfile(info, _Zeros(size))
