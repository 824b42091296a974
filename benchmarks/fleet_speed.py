"""Fleet audit speed: N simulated hosts (default 50) with M connections (default 16).

Run: python benchmarks/fleet_speed.py [--hosts 50] [--connections 16] [--transport replay|netns]

- ``replay`` (default, no privileges): each host is a local process that serves a prepared
  ``rigaudit snapshot --stdout`` stream (``ReplayTransport``); everything after the transport is
  the real coordinator: bounded connections, unpacking, auditing in worker processes, outliers,
  the grouped plan, per-host JSON and reports (``--out`` in a temporary folder).
- ``netns`` (root): each host is a network namespace with its own OpenSSH server, reached with the
  real ``ssh`` client; the node's ``rigaudit`` is a two-line script that streams the prepared
  archive, so the figure is SSH plus the coordinator, not N Python start-ups on this machine.

The hosts serve the seed as recorded by the collectors; one has a degraded GPU link and one
another driver, and the run checks that exactly those two are named. Prints the figures;
docs/fleet.md records them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.fleet.result import FleetResult  # noqa: E402
from rigaudit.orchestrator.fleet.runner import FleetOptions, run_fleet  # noqa: E402
from rigaudit.tools.remote.tarstream import snapshot_tar_bytes  # noqa: E402
from rigaudit.tools.remote.transport import ReplayTransport, SshTransport, Transport  # noqa: E402
from tests.support.fleet import fleet_snapshots, namespace_fleet  # noqa: E402

SEED = ROOT / "tests" / "fixtures" / "seed-lxc-8x-rtxpro6000"


def _archives(folder: Path) -> tuple[Path, Path, Path]:
    snapshots = fleet_snapshots(SEED)
    paths = []
    for name, source in (("base", snapshots.base), ("degraded", snapshots.degraded), ("driver", snapshots.other_driver)):
        path = folder / f"{name}.tar.gz"
        path.write_bytes(snapshot_tar_bytes(source))
        paths.append(path)
    return paths[0], paths[1], paths[2]


def _served(index: int, hosts: int, archives: tuple[Path, Path, Path]) -> Path:
    base, degraded, driver = archives
    return degraded if index == hosts // 3 else driver if index == 2 * hosts // 3 else base


@contextlib.contextmanager
def replay_fleet(hosts: int, folder: Path) -> Iterator[tuple[list[str], Transport]]:
    archives = _archives(folder)
    names = [f"gpu{i:03d}" for i in range(1, hosts + 1)]
    yield names, ReplayTransport({name: _served(i, hosts, archives) for i, name in enumerate(names, 1)})


@contextlib.contextmanager
def netns_fleet(hosts: int, folder: Path) -> Iterator[tuple[list[str], Transport]]:
    archives = _archives(folder)
    server = folder / "serve-archive"
    server.write_text('#!/bin/sh\nexec cat "$RIGAUDIT_ARCHIVE"\n')
    server.chmod(0o755)
    with namespace_fleet(folder / "ns") as fleet:
        for i in range(1, hosts + 1):
            fleet.add_node(None, rigaudit=server, env={"RIGAUDIT_ARCHIVE": str(_served(i, hosts, archives))})
        assert fleet.ssh_config is not None
        transport = SshTransport(command=tuple(fleet.ssh_command.split()), config=fleet.ssh_config)
        yield [n.alias for n in fleet.nodes], transport


def measure(hosts: int, connections: int, kind: str, keep: bool) -> tuple[FleetResult, float, list[str]]:
    folder = Path(tempfile.mkdtemp(prefix="rigaudit-fleet-bench-"))
    try:
        maker = replay_fleet if kind == "replay" else netns_fleet
        with maker(hosts, folder) as (names, transport):
            options = FleetOptions(max_connections=connections, out=folder / "out" if keep else None)
            started = time.perf_counter()
            result = anyio.run(lambda: run_fleet(names, transport, options))
            wall = time.perf_counter() - started
            odd = sorted({o.host for o in result.outliers})
            expected = sorted({names[hosts // 3 - 1], names[2 * hosts // 3 - 1]})
            if odd != expected or result.failures:
                raise SystemExit(f"unexpected result: outliers {odd} (expected {expected}), failures {result.failures}")
            return result, wall, odd
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--transport", choices=("replay", "netns"), default="replay")
    parser.add_argument("--out", action="store_true", help="also write per-host snapshots, JSON and reports (--out)")
    args = parser.parse_args()
    result, wall, odd = measure(args.hosts, args.connections, args.transport, args.out)
    collect = sum(a.collect_s for a in result.audits) / len(result.audits)
    judge = sum(a.audit_s for a in result.audits) / len(result.audits)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    files = "per-host files written" if args.out else "results only"
    print(
        f"fleet of {args.hosts} hosts ({args.transport}), {args.connections} connections, {len(result.audits)} audited, {files}"
    )
    print(f"  wall time            {wall:6.1f} s   ({wall / args.hosts * 1000:.0f} ms per host)")
    print(f"  mean collect / judge {collect:6.2f} s / {judge:.2f} s per host (judge includes waiting for a worker)")
    cpu = children.ru_utime + children.ru_stime
    print(f"  CPU (children)       {cpu:6.1f} s on {len(os.sched_getaffinity(0))} CPU(s), load average {os.getloadavg()[0]:.1f}")
    print(f"  peak RSS (coordinator) {rss:.0f} MiB")
    print(f"  outliers named       {', '.join(odd)}; {len(result.plan)} distinct fixes")


if __name__ == "__main__":
    main()
