"""What reading untrusted input safely costs: mirror reads vs plain reads, the seed audit, bundle unpacking, a bomb.

Run: python benchmarks/untrusted_reads.py [SNAPSHOT_DIR]
Prints figures (CPU seconds are best of N, so a busy machine shows the cost, not the wait); with $OUT set,
also writes them to $OUT/untrusted_reads.json. docs/performance.md records them ("Check speed").
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.audit.run import run_audit  # noqa: E402
from rigaudit.tools.hosts.mirror import Mirror  # noqa: E402
from rigaudit.tools.hosts.snapshot import SnapshotHost  # noqa: E402
from rigaudit.tools.share import BundleError, share_bundle, unpack_bundle  # noqa: E402
from tests.support.archives import gzip_bomb  # noqa: E402

SEED = ROOT / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"


def best_cpu(work, repeats: int = 5) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def best_split(work, repeats: int = 3) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """User and system CPU seconds of the cheapest of ``repeats`` runs (system: the kernel's file creation)."""
    runs = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_SELF)
        work()
        after = resource.getrusage(resource.RUSAGE_SELF)
        runs.append((after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime))
    return min(runs, key=sum)


def reads(snapshot: Path) -> dict[str, float]:
    """Microseconds per file: every regular file of the mirror read through Mirror, and as a plain path."""
    files = sorted(Mirror(snapshot).walk().files)
    mirror = Mirror(snapshot)
    root = snapshot / "files"
    safe = best_cpu(lambda: [mirror.read(p) for p in files])
    plain = best_cpu(lambda: [(root / p.lstrip("/")).read_bytes() for p in files])
    depth = sum(p.count("/") for p in files) / len(files)
    return {
        "files": len(files),
        "mean_depth": round(depth, 1),
        "mirror_us": 1e6 * safe / len(files),
        "plain_us": 1e6 * plain / len(files),
    }


def audit(snapshot: Path) -> float:
    return best_cpu(lambda: anyio.run(lambda: run_audit(SnapshotHost(snapshot))))


def bundles(snapshot: Path, scratch: Path) -> dict[str, float]:
    bundle = scratch / "b.tar.gz"
    share_bundle(snapshot, bundle)
    counter = iter(range(1000))
    user, system = best_split(lambda: unpack_bundle(bundle, scratch / f"u{next(counter)}"))
    unpacked = sum(1 for p in (scratch / "u0").rglob("*") if p.is_file())
    bomb = scratch / "bomb.tar.gz"
    size = 2 * 1024 * 1024 * 1024  # 2 GiB of zeros: about 2 MB compressed
    gzip_bomb(bomb, size, compresslevel=9)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        unpack_bundle(bomb, scratch / "bomb")
        refused = ""
    except BundleError as exc:
        refused = str(exc).removeprefix(f"{bomb}: ")
    wall = time.perf_counter() - start
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    written = sum(p.stat().st_size for p in (scratch / "bomb").rglob("*") if p.is_file())
    return {
        "bundle_bytes": bundle.stat().st_size,
        "unpacked_files": unpacked,
        "unpack_cpu_s": user + system,
        "unpack_user_s": user,
        "unpack_system_s": system,
        "bomb_compressed_bytes": bomb.stat().st_size,
        "bomb_refused": bool(refused),
        "bomb_refusal": refused,
        "bomb_wall_s": wall,
        "bomb_written_mib": written / 2**20,
        "bomb_rss_growth_mib": grew / 1024,
    }


def main() -> int:
    snapshot = Path(sys.argv[1]) if len(sys.argv) > 1 else SEED
    with tempfile.TemporaryDirectory(prefix="rigaudit-untrusted-bench-") as tmp:
        figures = {"snapshot": str(snapshot), **reads(snapshot), "audit_cpu_s": audit(snapshot), **bundles(snapshot, Path(tmp))}
    print(f"reads: {figures['files']} files, mean depth {figures['mean_depth']} components")
    print(f"  through the mirror (O_NOFOLLOW walk, lstat/fstat): {figures['mirror_us']:.1f} us per file")
    print(f"  plain path read_bytes (follows links):             {figures['plain_us']:.1f} us per file")
    print(f"whole in-process audit of the snapshot: {figures['audit_cpu_s']:.2f} s CPU")
    kib = figures["bundle_bytes"] / 1024
    print(
        f"share bundle {kib:.0f} KiB, {figures['unpacked_files']} files, unpacked (bounded, streamed) in "
        f"{figures['unpack_cpu_s']:.3f} s CPU ({figures['unpack_user_s']:.3f} s user, {figures['unpack_system_s']:.3f} s system)"
    )
    print(
        f"gzip bomb of {figures['bomb_compressed_bytes'] / 2**20:.1f} MiB (2 GiB inside): "
        f"{'refused' if figures['bomb_refused'] else 'NOT refused'} in {1000 * figures['bomb_wall_s']:.1f} ms, "
        f"{figures['bomb_written_mib']:.0f} MiB written, RSS +{figures['bomb_rss_growth_mib']:.0f} MiB"
    )
    if figures["bomb_refused"]:
        print(f"  {figures['bomb_refusal']}")
    out = os.environ.get("OUT")
    if out:
        Path(out, "untrusted_reads.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
