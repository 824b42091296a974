"""Confidential computing (CC) on the GPUs: NVML's system CC state and the GPUs' ready state.

Reads ``nvmlSystemGetConfComputeState`` (``ccFeature``: CC mode on; ``devToolsMode``: the GPUs' CC mode is DevTools,
for profiling and debugging, not production; ``environment``) and ``nvmlSystemGetConfComputeGpusReadyState`` (0 not
ready, 1 ready), as NVIDIA's nvtrust GPU verifier does. In CC mode CUDA refuses work until the CVM sets the GPUs ready,
after attesting them (``cudaGetDeviceCount`` 802, "system not yet initialized"; ``nvidia-smi conf-compute -srs 1``);
GPU-to-GPU traffic is encrypted and bounces through shared system memory, so the driver offers no P2P (NVIDIA's PPCIe
mode, for HGX systems given whole to one CVM, is the one that trusts NVLink with plain text).
"""

from __future__ import annotations

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, nvml_ref

STATE_FN = "nvmlSystemGetConfComputeState"
READY_FN = "nvmlSystemGetConfComputeGpusReadyState"
CC_SOURCE = "https://github.com/NVIDIA/nvtrust (GPU verifier; issues 56, 87)"
NO_CC = ("NOT_SUPPORTED", "FUNCTION_NOT_FOUND", "NOT_FOUND")
"""NVML's answers where the driver or the GPUs have no CC: nothing to judge."""


class ConfCompute(Record):
    on: bool | None
    """CC mode on (None: NVML's state was not read)."""
    devtools: bool
    ready: bool | None
    """The GPUs' CC ready state (None: not read)."""
    error: str | None
    """Why the state was not read (an NVML error name), when it was not."""
    asked: bool = True
    """NVML was asked (False: NVML was unusable, so nothing was read)."""

    @property
    def refs(self) -> tuple[str, ...]:
        if not self.asked:
            return ()
        return (nvml_ref(STATE_FN, ()),) if self.ready is None else (nvml_ref(STATE_FN, ()), nvml_ref(READY_FN, ()))


def _flag(value: object, key: str) -> bool:
    return isinstance(value, dict) and bool(value.get(key))


async def read_conf_compute(probe: Probe) -> ConfCompute:
    state = await probe.nvml(STATE_FN)
    if not state.ok:
        return ConfCompute(on=False if state.error in NO_CC else None, devtools=False, ready=None, error=state.error)
    on = _flag(state.value, "ccFeature")
    ready = await probe.nvml(READY_FN) if on else None
    readiness = None if ready is None or not ready.ok else bool(ready.value)
    return ConfCompute(on=on, devtools=on and _flag(state.value, "devToolsMode"), ready=readiness, error=None)
