"""Confidential computing (CC) on Hopper GPUs as a CVM guest sees it (``DriverSpec.cc``): NVML's system CC state and
ready state, ``nvidia-smi conf-compute``'s answers, and what CC mode does to the GPUs.

From public sources: NVML's ``nvmlSystemGetConfComputeState`` (``environment``, ``ccFeature``, ``devToolsMode``) and
``nvmlSystemGetConfComputeGpusReadyState`` (0 not ready, 1 ready), as NVIDIA's nvtrust local GPU verifier reads them
(guest_tools/gpu_verifiers/local_gpu_verifier/src/verifier/nvml); ``nvidia-smi conf-compute -f`` ("CC status: ON") and
``-grs`` ("Confidential Compute GPUs Ready state: ready" / "not-ready"), as NVIDIA/nvtrust issues 37 and 56 show them;
until the ready state is set, CUDA refuses work (``cudaGetDeviceCount returned 802 -> system not yet initialized``:
nvtrust issue 87) and ``nvidia-smi conf-compute -srs 1`` (or a successful attestation) sets it; in CC mode GPU-to-GPU
traffic is encrypted by the copy engines and bounces through shared system memory (the PPCIe verifier's README), so
the driver offers no P2P. Every host records NVML's answer (``ccFeature`` 0 where CC is off), as NVML gives it on any
driver that has the call. Not shown by a public source read here, so stand-ins: the P2P status code NVML gives a CC
pair (the guest's CHIPSET_NOT_SUPPORTED stays), the ``environment`` value's number (2: production) and the exact
``-f`` wording of every driver branch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.hostgen.build import Built

STATE_FN = "nvmlSystemGetConfComputeState"
READY_FN = "nvmlSystemGetConfComputeGpusReadyState"
PRODUCTION = 2
SEV_SNP = "Memory Encryption Features active: AMD SEV SEV-ES SEV-SNP"
"""The line an AMD SEV-SNP guest's kernel prints at boot."""


def write_conf_compute(built: Built) -> None:
    tree, d = built.tree, built.spec.driver
    on = d.cc is not None
    state = {"environment": PRODUCTION if on else 0, "ccFeature": int(on), "devToolsMode": int(on and d.cc_devtools)}
    tree.call(STATE_FN, (), state)
    tree.call(READY_FN, (), int(on and d.cc_ready))
    tree.command(("nvidia-smi", "conf-compute", "-f"), f"CC status: {'ON' if on else 'OFF'}\n")
    ready = "ready" if on and d.cc_ready else "not-ready"
    tree.command(("nvidia-smi", "conf-compute", "-grs"), f"Confidential Compute GPUs Ready state: {ready}\n")
