"""The words of a command line that name an inference server or one of its workers.

One list for the audit (:mod:`rigaudit.agents.facts.processes`) and for the processes a share bundle keeps
(:mod:`rigaudit.tools.share._processes`), so a bundle keeps every process the audit judges as a server.
"""

from __future__ import annotations

from collections.abc import Sequence

SERVER_MARKERS: tuple[str, ...] = (
    "sglang",
    "vllm",
    "tensorrt_llm",
    "trtllm",
    "text-generation-launcher",
    "text_generation_server",
    "lmdeploy",
    "llama-server",
    "tritonserver",
    "ollama serve",
    "ollama runner",
    "ollama_llama_server",
    "aphrodite",
    "mlc_llm",
    "lorax-launcher",
    "mistralrs-server",
    "llamafile",
    "nim_llm_sdk",
    "ray::rayworkerwrapper",
    "ray::servereplica",
)
"""Substrings (lower case) of a command line that mark an inference server or one of its workers. ``nim_llm_sdk``:
NVIDIA NIM for LLMs' engine (``python3 -m nim_llm_sdk.entrypoints.openai.api_server``, as its start_server.sh starts
it). Ray actors carry their title as their command line (setproctitle): ``ray::RayWorkerWrapper...`` is vLLM's Ray
worker (multi-node vLLM on Ray: a worker node runs only these, under ``raylet``), ``ray::ServeReplica:APP:DEPLOYMENT`` a
Ray Serve replica."""

MAX_ARGV_BYTES = 128 * 1024
"""The bytes of a command line read as its words (the kernel's longest single argument, MAX_ARG_STRLEN): a server's
flags lie within them, and a process of any user with a 2 MB argument vector is not decoded whole at every look."""
MAX_ARGV_WORDS = 1024
"""The words of a command line read, at most."""


def argv_words(data: bytes) -> list[bytes]:
    """The first words of a NUL-separated command line (``/proc/PID/cmdline``), within the bounds above."""
    return [w for w in data[:MAX_ARGV_BYTES].split(b"\x00", MAX_ARGV_WORDS)[:MAX_ARGV_WORDS] if w]


RAYLET = "raylet"
"""The basename of Ray's per-node daemon, whose children the Ray actors are: one Ray instance on this node."""


def raylet(argv: Sequence[str] | None) -> bool:
    """Whether the command line is Ray's per-node daemon (``.../ray/core/src/ray/raylet/raylet --node_ip_address=...``)."""
    if not argv:
        return False
    return argv[0].rsplit("/", 1)[-1] == RAYLET


def server_marker(argv: Sequence[str] | None) -> str | None:
    """The first of :data:`SERVER_MARKERS` found in the command line, or None."""
    if not argv:
        return None
    line = " ".join(argv).lower()
    return next((m for m in SERVER_MARKERS if m in line), None)
