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
import functools
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rigaudit.orchestrator.audit.run import AuditOptions, run_audit  # noqa: E402
from rigaudit.tools.hosts.snapshot import SnapshotHost  # noqa: E402
from tests.hostgen import ARCHETYPES  # noqa: E402
from tests.hostgen.cache import snapshot  # noqa: E402
from tests.support.archetype_cases import FAULTS  # noqa: E402
from tests.support.mutate import light_copy, set_command, set_nvml, set_unreadable  # noqa: E402


def _verdict(root: Path, check: str) -> str:
    """The status of ``check`` in an audit of ``root`` by its area alone (its premises are the area's facts)."""
    options = AuditOptions(areas=[check.partition(".")[0]])
    result = anyio.run(lambda: run_audit(SnapshotHost(root), options=options))
    found = next((f for f in result.findings if f.check == check), None)
    return "absent" if found is None else found.status


def _unreadable(root: Path, *, path: str) -> None:
    set_unreadable(root, path)


def _denied(root: Path, *, argv: list[str]) -> None:
    set_command(root, argv, error="denied")


def _failing(root: Path, *, fn: str, args: list[int]) -> None:
    set_nvml(root, fn, args, error="UNKNOWN")


def _unreadings(evidence: tuple[str, ...]) -> list[tuple[str, Callable[[Path], None]]]:
    """How to take each piece of evidence away: a file or folder unreadable (EACCES), a command denied, an NVML
    call failing (UNKNOWN); globs and other kinds are left out."""
    out: dict[str, Callable[[Path], None]] = {}
    for ref in evidence:
        kind, _, what = ref.partition(":")
        if kind in ("file", "dir") and what.startswith("/") and not any(c in what for c in "*?["):
            out[ref] = functools.partial(_unreadable, path=what)
        elif kind == "cmd" and what:
            out[ref] = functools.partial(_denied, argv=what.split(" "))
        elif kind == "nvml" and (call := re.fullmatch(r"(\w+)\(([\d, ]*)\)", what)):
            args = [int(a) for a in call.group(2).split(",") if a.strip()]
            out[ref] = functools.partial(_failing, fn=call.group(1), args=args)
    return list(out.items())


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
            for i, (ref, take_away) in enumerate(_unreadings(finding.evidence)):
                copy = light_copy(source, Path(scratch) / f"{n}-{i}")
                take_away(copy)
                tried += 1
                got = _verdict(copy, check)
                outcomes[got] = outcomes.get(got, 0) + 1
                if got == "ok":
                    false_ok += 1
                    print(f"false ok: {spec.name}: {check} with {ref} unread")
    took = time.perf_counter() - started
    shown = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    print(
        f"{len(cases)} faults, {tried} pieces of evidence taken away one at a time ({shown}): {false_ok} false ok ({took:.0f} s)"
    )
    return 1 if false_ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
