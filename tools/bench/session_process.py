"""One ``bench inference`` session in a fresh process, as a before or an after run is.

``bench calibrate`` measures what separates two sessions: a new process (its CPU, its imports, its
connections), seconds to minutes later. So each of its sessions runs here, in a child process:
``python -m rigaudit.tools.bench.session_process`` reads the load (a ``LoadSpec`` as JSON, on
stdin: an API key never shows on a command line) and writes the ``rigaudit.bench/1`` result on
stdout. Nothing else is printed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rigaudit.tools.bench.errors import BenchFailed, BenchInputError
from rigaudit.tools.bench.loadgen import LoadSpec
from rigaudit.tools.bench.results import BenchResult
from rigaudit.tools.core.record import as_dict

MAX_OUTPUT_BYTES = 256 * 1024 * 1024


def spec_json(spec: LoadSpec) -> str:
    data = as_dict(spec)
    data["slo"] = dict(spec.slo)
    return json.dumps(data)


def spec_from_json(text: str) -> LoadSpec:
    try:
        data: Any = json.loads(text)
        data["concurrency"] = tuple(int(c) for c in data["concurrency"])
        return LoadSpec(**data)
    except (ValueError, TypeError, KeyError) as exc:
        raise BenchInputError(f"not a load specification: {exc}") from None


async def run_session(spec: LoadSpec, *, timeout_s: float) -> BenchResult:
    """Run one session in a child process; BenchFailed (with its last words) when it does not give a result."""
    import anyio

    command = [sys.executable, "-m", "rigaudit.tools.bench.session_process"]
    try:
        with anyio.fail_after(timeout_s):
            done = await anyio.run_process(command, input=spec_json(spec).encode(), check=False)
    except TimeoutError:
        raise BenchFailed(f"a session did not finish within {timeout_s:g} s") from None
    except OSError as exc:
        raise BenchFailed(f"cannot start a session process: {exc.strerror or exc}") from None
    if done.returncode != 0 or len(done.stdout) > MAX_OUTPUT_BYTES:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise BenchFailed(f"a session failed: {last[0][:300]}")
    try:
        return BenchResult.model_validate_json(done.stdout)
    except ValueError as exc:
        raise BenchFailed(f"a session wrote no result: {str(exc).splitlines()[0]}") from None


def main() -> int:
    import anyio

    from rigaudit.tools.bench.loadgen import run_load
    from rigaudit.tools.core.errors import RigauditError

    try:
        spec = spec_from_json(sys.stdin.read(1024 * 1024))
        result = anyio.run(run_load, spec)
    except RigauditError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stdout.write(result.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
