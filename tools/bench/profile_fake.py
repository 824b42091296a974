"""The fake inference server with a fake GPU behind it, for the profile's tests: known busy and idle time per token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from rigaudit.tools.bench.fake_server import FakeTiming, Generation, Generator
from rigaudit.tools.hosts.fake_nvml import FakeGpu

__all__ = ["busy_generator"]


def busy_generator(timing: FakeTiming, gpu: FakeGpu, busy_s: float) -> Generator:
    """Tokens on the schedule ttft, ttft + itl, ...; each token is the last ``busy_s`` before it is due, in kernels on ``gpu``.

    The GPU is idle for the rest of each gap, as a server's GPU waits for a slow host between steps.
    """

    def generate(body: dict[str, Any], prompt: str, max_tokens: int, number: int) -> Generation:
        del body, number

        def tokens() -> Iterator[str]:
            start = time.perf_counter() + timing.ttft_s
            for index in range(max_tokens):
                due = start + index * timing.itl_s
                time.sleep(max(0.0, due - busy_s - time.perf_counter()))
                with gpu.kernel():
                    time.sleep(max(0.0, due - time.perf_counter()))
                yield f" tok{index}"

        return Generation(prompt_tokens=max(1, len(prompt.split())), tokens=tokens())

    return generate
