"""What the device scripts share: rigaudit's dependencies from the wheelhouse, the tiny server's start, wait and stop.

benchmarks/explain_h200.py and benchmarks/bench_stats_h200.py run on a GPU machine that has torch but lacks
pydantic and openai; rigaudit runs there as ``python -m rigaudit`` with those unpacked from the wheels
(benchmarks/make_wheelhouse.sh) onto its PYTHONPATH. So this module imports only the standard library, and
rigaudit nowhere: it must work before anything is unpacked. CPU-tested by tests/test_device_run.py.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"^(ready on|listening on) ")
"""The line benchmarks/tiny_openai_server.py and rigaudit's fake server print once they serve."""
NEEDED = ("pydantic", "anyio", "rich")
"""What rigaudit imports that a bare GPU machine may lack."""


def dependencies(wheels: Path | str, *, modules: Sequence[str] = NEEDED, python: str = sys.executable) -> list[str]:
    """Folders to put before rigaudit on PYTHONPATH: none when ``python`` imports ``modules`` already; else every
    wheel in ``wheels`` unpacked into one temporary folder (removed when this process exits). SystemExit with
    one line when they are missing and there is no wheel."""
    probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], check=False, capture_output=True)
    if probe.returncode == 0:
        return []
    found = sorted(Path(wheels).glob("*.whl"))
    if not found:
        raise SystemExit(f"rigaudit's dependencies ({', '.join(modules)}) are missing and there are no wheels in {wheels}")
    site = Path(tempfile.mkdtemp(prefix="rigaudit-deps-"))
    atexit.register(shutil.rmtree, site, True)
    for wheel in found:
        try:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
        except (OSError, zipfile.BadZipFile) as exc:
            raise SystemExit(f"cannot unpack {wheel.name}: {exc}") from None
    return [str(site)]


def environment(site: Sequence[str], state: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with ``site`` and the repository first on PYTHONPATH, and rigaudit's
    state (calibrations, journals) kept under ``state``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*site, str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["XDG_STATE_HOME"] = str(state)
    return env


def rigaudit(argv: Sequence[str], *, env: Mapping[str, str], timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
    """``python -m rigaudit ARGV`` from the repository, its output captured (exit 124 and what it said by then
    when it overruns ``timeout_s``)."""
    command = [sys.executable, "-m", "rigaudit", *argv]
    try:
        return subprocess.run(command, check=False, cwd=ROOT, env=dict(env), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        said = [s.decode(errors="replace") if isinstance(s, bytes) else (s or "") for s in (exc.stdout, exc.stderr)]
        return subprocess.CompletedProcess(command, 124, said[0], said[1] + f"\ntimed out after {timeout_s:g} s")


class ServerDown(RuntimeError):
    """The server exited, or did not say it was ready in time (it is stopped either way)."""


@dataclass
class Server:
    """A started server: its process, its URL, and how long it took to come up."""

    proc: subprocess.Popen[bytes]
    url: str
    started_s: float

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; waits for it either way (no zombie left)."""
        stop(self.proc, timeout_s)


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_server(
    argv: Sequence[str],
    *,
    log: Path,
    port: int,
    env: Mapping[str, str],
    timeout_s: float = 300.0,
    poll_s: float = 0.2,
) -> Server:
    """Start ``argv`` (a server on ``port``) with its output in ``log``, and wait until the log says it serves.

    ServerDown naming the log when it exits first or is not ready within ``timeout_s`` (then it is killed)."""
    begin = time.perf_counter()
    with log.open("wb") as handle:  # the child keeps its own descriptor
        proc = subprocess.Popen(list(argv), cwd=ROOT, env=dict(env), stdout=handle, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while True:
        if any(READY.match(line) for line in log.read_text(errors="replace").splitlines()):
            return Server(proc, f"http://127.0.0.1:{port}", round(time.perf_counter() - begin, 1))
        if proc.poll() is not None:
            raise ServerDown(f"the server exited ({proc.returncode}) before it was ready; see {log.name}")
        if time.monotonic() >= deadline:
            proc.kill()
            proc.wait()
            raise ServerDown(f"the server was not ready within {timeout_s:g} s; see {log.name}")
        time.sleep(poll_s)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def machine() -> str:
    """The GPUs ``nvidia-smi -L`` lists, on one line (or why there are none)."""
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True, text=True, timeout=20)
        return " ".join(proc.stdout.split()) or "no GPU listed"
    except (OSError, subprocess.TimeoutExpired):
        return "no nvidia-smi (CPU check)"
