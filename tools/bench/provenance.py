"""What a result says about what ran: the GPUs at the start (read only), and a digest of its samples.

``gpus_at_start`` asks ``nvidia-smi --query-gpu`` once (a read; rigaudit never sets a clock, a power
limit or any other GPU setting) for each GPU's name, a digest of its UUID (never the UUID itself),
the driver, the SM and memory clocks and the power limit. They are the GPUs of the machine the load
came from: the server's when it serves on that machine. ``samples_digest`` is a SHA-256 over every
run's requests, so ``bench compare`` can tell a file whose samples or summary were edited.
``server_version`` asks the server's own version endpoint where its API has one (vLLM's ``/version``,
SGLang's ``/get_server_info``, TGI's ``/info``): one GET each, a short deadline, nothing when none answers.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import shutil
import subprocess
import urllib.request
from collections.abc import Sequence

from rigaudit.tools.bench.results import MAX_SERVER_VERSION, GpuAtStart, Run

QUERY = "name,uuid,driver_version,clocks.sm,clocks.mem,power.limit"
TIMEOUT_S = 10.0


def _number(text: str) -> float | None:
    try:
        return float(text.split(maxsplit=1)[0])
    except (ValueError, IndexError):
        return None


def parse_gpus(text: str) -> list[GpuAtStart]:
    """The rows of ``nvidia-smi --query-gpu=QUERY --format=csv,noheader``; a row that does not parse is left out."""
    found = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6 or not parts[0] or not parts[1]:
            continue
        name, uuid, driver, sm, mem, power = parts
        found.append(
            GpuAtStart(
                name=name[:100],
                uuid_digest=hashlib.sha256(uuid.encode()).hexdigest()[:16],
                driver=driver[:40] or None,
                sm_clock_mhz=_number(sm),
                mem_clock_mhz=_number(mem),
                power_limit_w=_number(power),
            )
        )
    return found


def gpus_at_start() -> list[GpuAtStart]:
    """This machine's GPUs as nvidia-smi reads them now; none without nvidia-smi or when it fails."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        done = subprocess.run(
            [tool, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
            check=False,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_gpus(done.stdout) if done.returncode == 0 else []


def samples_digest(runs: Sequence[Run]) -> str:
    """``sha256:<hex>`` over every run's level, repeat, wall time and requests, in order."""
    payload = [[r.concurrency, r.repeat, r.duration_s, [s.model_dump(mode="json") for s in r.samples]] for r in runs]
    return "sha256:" + hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


VERSION_PATHS = ("/version", "/get_server_info", "/info")
MAX_VERSION_BYTES = 64 * 1024


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def server_version(base_url: str, *, timeout_s: float = 2.0) -> str | None:
    """``0.11.0 (/version)``: the version the server's API gives, and where; None when it gives none."""
    for path in VERSION_PATHS:
        try:
            with urllib.request.urlopen(_root(base_url) + path, timeout=timeout_s) as response:
                data = json.loads(response.read(MAX_VERSION_BYTES + 1)[:MAX_VERSION_BYTES])
        except (OSError, ValueError, RecursionError, http.client.HTTPException):  # URLError is an OSError
            continue
        if not isinstance(data, dict):
            continue
        version = data.get("version")
        if isinstance(version, str) and version.strip():
            text = f"{version.strip()} ({path})"
            return "".join(ch for ch in text if ch.isprintable())[:MAX_SERVER_VERSION]
    return None
