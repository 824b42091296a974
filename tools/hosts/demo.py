"""Demo snapshots shipped as package data, unpacked once into the user's cache."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DEMOS = {
    "h200": ("h200x2-vm.tar.gz", "2x H200 over NVLink (NV18), recorded by rigaudit on a real GPU machine"),
    "seed": ("seed-lxc-8x-rtxpro6000.tar.gz", "8x RTX PRO 6000 Blackwell behind PCIe switches, Proxmox host (the story's host)"),
}
DEFAULT_DEMO = "h200"


def register(name: str, archive: str, description: str) -> None:
    DEMOS[name] = (archive, description)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rigaudit" / "demos"


def demo_snapshot(name: str | None = None) -> Path:
    """The directory of an unpacked demo snapshot (unpacked on first use)."""
    import tarfile  # here, not at the top: every command that takes --demo imports this module
    import tempfile
    from importlib import resources

    name = name or DEFAULT_DEMO
    if name not in DEMOS:
        raise KeyError(name)
    archive, _ = DEMOS[name]
    target = cache_dir() / archive.removesuffix(".tar.gz")
    marker = target / ".complete"
    if marker.exists():
        return _only_child(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".demo-", dir=target.parent))
    with resources.as_file(resources.files("rigaudit.tools.data") / archive) as path, tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.issym() or member.islnk() or member.name.startswith("/") or ".." in member.name.split("/"):
                raise ValueError(f"unsafe member in demo archive: {member.name}")
        tar.extractall(staging)
    (staging / ".complete").write_text("ok\n")
    with contextlib.suppress(OSError):  # another process may have won the race
        staging.rename(target)
    return _only_child(target)


def _only_child(folder: Path) -> Path:
    children = [p for p in folder.iterdir() if p.is_dir()]
    return children[0] if len(children) == 1 else folder
