"""Run a command and print its wall time and the CPU it and its children used (the test suite's cost).

Usage: python .ci/timed.py LABEL CMD...; exits with CMD's status.
"""

import resource
import subprocess
import sys
import time

label, command = sys.argv[1], sys.argv[2:]
started = time.monotonic()
status = subprocess.call(command)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
wall = time.monotonic() - started
sys.stderr.write(f"ci: {label} took {wall:.0f} s wall, {used.ru_utime + used.ru_stime:.0f} s CPU ({used.ru_utime:.0f} user)\n")
sys.exit(status)
