"""Which GPU library this process can drive benchmarks with: torch, else NVIDIA's cuda-bindings."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Literal

from rigaudit.tools.bench.errors import BenchInputError, BenchUnavailable

Backend = Literal["torch", "cuda-bindings"]

NO_BACKEND = (
    "neither torch nor NVIDIA's cuda-bindings is installed in this Python: "
    "install one (`pip install 'rigaudit[bench]'` brings torch, `pip install cuda-bindings` the driver API)"
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def pick_backend(prefer: Backend | None = None) -> Backend:
    """torch when importable, else cuda-bindings; BenchUnavailable (one line) when neither is."""
    has_torch = _installed("torch")
    has_cuda = _installed("cuda.bindings")
    if prefer == "torch" and not has_torch:
        raise BenchUnavailable("torch is not installed in this Python (`pip install 'rigaudit[bench]'`)")
    if prefer == "cuda-bindings" and not has_cuda:
        raise BenchUnavailable("NVIDIA's cuda-bindings is not installed in this Python (`pip install cuda-bindings`)")
    if prefer:
        return prefer
    if has_torch:
        return "torch"
    if has_cuda:
        return "cuda-bindings"
    raise BenchUnavailable(NO_BACKEND)


def parse_gpu_list(text: str | None) -> list[int] | None:
    """``"0,1"`` → [0, 1]; None or empty → None (all visible GPUs)."""
    if not text:
        return None
    try:
        gpus = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchInputError(f"--gpus wants indices like 0,1, not {text!r}") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise BenchInputError(f"--gpus wants distinct non-negative indices, not {text!r}")
    return gpus


def check_gpus(wanted: Sequence[int] | None, visible: int, *, at_least: int, what: str) -> list[int]:
    """The GPUs to use; BenchUnavailable with one clear line when there are too few."""
    if visible < at_least:
        raise BenchUnavailable(f"{what} needs at least {at_least} GPUs; {visible} visible to this process")
    gpus = list(wanted) if wanted is not None else list(range(visible))
    bad = [g for g in gpus if g >= visible]
    if bad:
        raise BenchInputError(f"GPU {bad[0]} does not exist: {visible} visible (0..{visible - 1})")
    if len(gpus) < at_least:
        raise BenchInputError(f"{what} needs at least {at_least} GPUs; --gpus names {len(gpus)}")
    return gpus
