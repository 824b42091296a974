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
)
"""Substrings (lower case) of a command line that mark an inference server or one of its workers."""


def server_marker(argv: Sequence[str] | None) -> str | None:
    """The first of :data:`SERVER_MARKERS` found in the command line, or None."""
    if not argv:
        return None
    line = " ".join(argv).lower()
    return next((m for m in SERVER_MARKERS if m in line), None)
