"""docs/secrets.md's benchmark runs after the README's install, which has no pytest (issue 34): what it takes from
tests/ is plain support code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_PYTEST = (
    "import sys, runpy; sys.modules['pytest'] = None; sys.path.insert(0, sys.argv[1]); "
    "import redaction_false_positives as b; b.corpus_pass()"
)


def test_the_redaction_benchmarks_corpus_runs_without_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_PYTEST, str(ROOT / "benchmarks")], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "planted corpus: " in done.stdout and "secrets redacted" in done.stdout
