"""Premises swept: a problem the rules find must never turn ``ok`` when a file its evidence cites cannot be read.

For every injected fault of the archetype verdict tests whose verdict is a problem, each file and folder the
problem's evidence names is made unreadable in a copy of the faulted snapshot (EACCES, as a pod without a
capability or a non-root user meets it), one at a time, and the copy is audited again. A verdict that was a problem
and reads ``ok`` once its evidence is gone judges a fact it did not read: the class of issue #33 (a premise not
checked). Unknown, another problem, or the same problem are all honest.

Run: python benchmarks/unread_sweep.py [--most N]
Prints each false ``ok`` and the counts; exit 1 when any was found.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit  # noqa: E402
from rigaudit.tools.hosts.snapshot import SnapshotHost  # noqa: E402
from tests.hostgen import ARCHETYPES  # noqa: E402
from tests.hostgen.cache import snapshot  # noqa: E402
from tests.support.archetype_cases import FAULTS  # noqa: E402
from tests.support.mutate import light_copy, set_unreadable  # noqa: E402


def _verdict(root: Path, check: str) -> str:
    """The status of ``check`` in an audit of ``root`` by its area alone (its premises are the area's facts)."""
    options = AuditOptions(areas=[check.partition(".")[0]])
    result = anyio.run(lambda: run_audit(SnapshotHost(root), options=options))
    found = next((f for f in result.findings if f.check == check), None)
    return "absent" if found is None else found.status


def _paths(evidence: tuple[str, ...]) -> list[str]:
    """The files and folders an evidence list names (``file:/p``, ``dir:/p``); globs and other kinds left out."""
    out = []
    for ref in evidence:
        kind, _, path = ref.partition(":")
        if kind in ("file", "dir") and path.startswith("/") and not any(c in path for c in "*?["):
            out.append(path)
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=0, help="sweep at most N faults (0: all)")
    args = parser.parse_args(argv)
    cases = [c for c in FAULTS if "@" in c[4]]
    if args.most:
        cases = cases[: args.most]
    started = time.perf_counter()
    tried = false_ok = 0
    outcomes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="rigaudit-unread-") as scratch:
        for n, (name, fault, kwargs, check, _want) in enumerate(cases):
            spec = fault(ARCHETYPES[name], **kwargs)
            source = snapshot(spec)
            options = AuditOptions(areas=[check.partition(".")[0]])
            result = anyio.run(lambda: run_audit(SnapshotHost(source), options=options))
            finding = next(f for f in result.findings if f.check == check)
            for i, path in enumerate(_paths(finding.evidence)):
                copy = light_copy(source, Path(scratch) / f"{n}-{i}")
                set_unreadable(copy, path)
                tried += 1
                got = _verdict(copy, check)
                outcomes[got] = outcomes.get(got, 0) + 1
                if got == "ok":
                    false_ok += 1
                    print(f"false ok: {spec.name}: {check} with {path} unreadable")
    took = time.perf_counter() - started
    shown = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    print(f"{len(cases)} faults, {tried} files made unreadable one at a time ({shown}): {false_ok} false ok ({took:.0f} s)")
    return 1 if false_ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
