"""``rigaudit audit --results DIR`` speed: N gathered ``rigaudit check --json`` results (default 2000).

Run: python benchmarks/gathered_speed.py [--hosts 2000] [--fixture tests/fixtures/h200x2-vm]

One ``rigaudit check --json`` of the fixture is written, then copied N times under distinct host names; the
fleet is judged in a child process (``--json`` to a temporary file). Prints the wall time, the child's CPU time
and its peak memory; docs/fleet.md records them.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--fixture", type=Path, default=ROOT / "tests" / "fixtures" / "h200x2-vm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rigaudit-gathered-") as tmp:
        folder = Path(tmp) / "results"
        folder.mkdir()
        one = Path(tmp) / "one.json"
        rigaudit = [sys.executable, "-m", "rigaudit.orchestrator.cli"]
        subprocess.run([*rigaudit, "check", "--snapshot", str(args.fixture), "--json", str(one), "-q"], check=False)
        base = json.loads(one.read_text())
        for number in range(args.hosts):
            base["host"] = base["audit"]["host"]["name"] = f"gpu-{number:05d}"
            (folder / f"gpu-{number:05d}.json").write_text(json.dumps(base))
        size = sum(p.stat().st_size for p in folder.iterdir())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [*rigaudit, "audit", "--results", str(folder), "--no-live", "--no-transcript", "--json", str(Path(tmp) / "f.json")],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        hosts = len(json.loads((Path(tmp) / "f.json").read_text())["hosts"]) if done.returncode == 0 else 0
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"{args.hosts} results ({size / 2**20:.0f} MiB): {hosts} hosts judged, exit {done.returncode}")
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s, peak memory {after.ru_maxrss / 1024:.0f} MiB")
    return 0 if hosts == args.hosts else 1


if __name__ == "__main__":
    sys.exit(main())
