"""A reader that goes away early ends the audit quietly, as Unix tools do."""

import subprocess
import sys


def test_audit_into_closed_pipe_has_no_traceback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigaudit", "audit", "--demo", "seed"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "unhandled" not in err
