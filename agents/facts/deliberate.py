"""The vendor's way of running it: configurations that look like faults and are documented, supported choices.

A rule that could mistake one of these for a fault reads the facts that make it deliberate first and says which
entry applies (``DELIBERATE``: what it is, the conditions under which the vendor supports it, and where that is
written). Pure data and pure helpers: the investigators read the facts.
"""

from __future__ import annotations

import re
from typing import Literal

from rigaudit.tools.core.record import Record

Support = Literal["yes", "no", "unknown"]


class Deliberate(Record):
    """A documented configuration and the conditions under which its vendor supports it."""

    key: str
    what: str
    conditions: tuple[str, ...]
    source: str
    """Where the vendor documents it."""


FORWARD_COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"
FORWARD_COMPAT = Deliberate(
    "cuda.forward_compat",
    "CUDA forward compatibility: the cuda-compat-MAJOR-MINOR libraries (libcuda of a newer driver branch) let a "
    "newer CUDA toolkit run on an older kernel-mode driver",
    (
        "NVIDIA data-center GPUs (select NGC Server Ready RTX SKUs and Jetson too); not GeForce: there CUDA init fails "
        "with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)",
        "a driver branch the compat package supports; another fails CUDA init with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)",
        "the compat libcuda is newer than the kernel module: the package installs it in /usr/local/cuda-X.Y/compat, "
        "found through LD_LIBRARY_PATH or an ld.so.conf.d entry (the NVIDIA Container Toolkit adds one for a container "
        "whose compat libcuda is newer than the host's driver)",
    ),
    FORWARD_COMPAT_DOC,
)
MIG_IN_USE = Deliberate(
    "gpu.mig_in_use",
    "MIG partitions that processes run on",
    ("NVML lists compute processes on the GPU's instances, or servers address MIG devices (MIG-<uuid>)",),
    "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
)
TUNED_PROFILE = Deliberate(
    "host.tuned",
    "Tunables owned by TuneD: the active profile's [cpu] and [vm] settings (its [sysctl] ones yield to /etc/sysctl.d "
    "under the default reapply_sysctl = 1 of tuned-main.conf)",
    (
        "tuned active (systemctl is-active tuned) with an active profile (/etc/tuned/active_profile)",
        "the profile (or one it includes) sets the tunable: tuned applies it again when it restarts or the profile "
        "reloads, so a direct sysfs or sysctl write does not last; the fix is a profile (a custom one that includes "
        "the active profile and overrides the setting, selected with tuned-adm profile)",
    ),
    "https://docs.redhat.com/en/documentation/red_hat_enterprise_linux/9/html/monitoring_and_managing_system_status_and_"
    "performance/getting-started-with-tuned_monitoring-and-managing-system-status-and-performance",
)
PERSISTENCE_BY_UNIT = Deliberate(
    "driver.persistence_by_unit",
    "Persistence kept by nvidia-persistenced's unit options, or by persistence mode set on the GPUs",
    (
        "nvidia-persistenced runs with the options its unit gives (--no-persistence-mode turns the mode off on "
        "purpose: the fix is the unit's option, not starting the daemon)",
        "persistence mode reported enabled on every GPU, whatever keeps it",
    ),
    "https://docs.nvidia.com/deploy/driver-persistence/",
)
MPS_DOC = "https://docs.nvidia.com/deploy/mps/"
MPS_SHARING = Deliberate(
    "cuda.mps_sharing",
    "NVIDIA MPS: CUDA processes share GPUs through one MPS server that nvidia-cuda-mps-control spawns",
    (
        "NVML lists the serving processes as MPS clients (nvmlDeviceGetMPSComputeRunningProcesses; nvidia-smi's M+C "
        "rows): they run through MPS on purpose (with the default pipe directory /tmp/nvidia-mps a client needs no "
        "CUDA_MPS_PIPE_DIRECTORY)",
        "the nvidia-cuda-mps-server process holds the GPUs for its clients: its memory and context are theirs, and "
        "stopping it ends every client",
        "EXCLUSIVE_PROCESS compute mode is what the MPS guide recommends: only the MPS server opens each GPU, and every "
        "client reaches it through the server",
    ),
    MPS_DOC,
)
CONFIDENTIAL_COMPUTING = Deliberate(
    "gpu.confidential_computing",
    "NVIDIA confidential computing: Hopper or later GPUs in CC mode inside a confidential VM (Intel TDX, AMD SEV-SNP)",
    (
        "NVML's CC state is on (nvmlSystemGetConfComputeState ccFeature): GPU-to-GPU traffic is encrypted by the copy "
        "engines and bounces through shared system memory, so the driver offers no P2P; that is the mode's design",
        "for tensor parallelism at NVLink speed NVIDIA's Protected PCIe mode (PPCIe) gives a whole HGX system to one "
        "CVM and trusts NVLink with plain text",
    ),
    "https://github.com/NVIDIA/nvtrust/blob/main/guest_tools/ppcie-verifier/README.md",
)
TIME_SLICING = Deliberate(
    "k8s.time_slicing",
    "GPU time-slicing by the NVIDIA Kubernetes device plugin: each GPU advertised as several nvidia.com/gpu replicas "
    "(devices <GPU UUID>::<n>), each handed to a pod; the pods' contexts interleave on the GPU",
    (
        "the plugin's config sets sharing.timeSlicing with replicas > 1 (its CONFIG_FILE, a ConfigMap), or GPU feature "
        "discovery labels the node nvidia.com/gpu.replicas > 1: several pods on one GPU are scheduled there on purpose",
        "no memory or fault isolation between replicas: the pods' memory fractions must fit the GPU together, and one "
        "pod's fault can take down the others",
        "every replica opens its own context on the GPU, so a compute mode that allows one context per GPU "
        "(Exclusive_Process) leaves the pods of every replica but the first without their GPU",
    ),
    "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html",
)
MINOR_COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
MINOR_COMPAT_MIN: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580"}
"""The least Linux driver on which every CUDA runtime of a major version runs (the CUDA Toolkit release notes)."""
MINOR_COMPAT = Deliberate(
    "cuda.minor_version_compat",
    "CUDA minor-version compatibility: a CUDA runtime of the driver's major version but a newer minor release runs "
    "on it, with a limited feature set",
    (
        "the runtime's major version is the driver's; the driver is at least the major's minimum ("
        + ", ".join(f"CUDA {major}.x: >= {version}" for major, version in MINOR_COMPAT_MIN.items())
        + ")",
        "PTX of the newer toolkit cannot be JIT-compiled by the older driver ('the provided PTX was compiled with an "
        "unsupported toolchain'): kernels shipped only as newer PTX, or compiled at run time, fail",
    ),
    MINOR_COMPAT_DOC,
)
DELIBERATE: tuple[Deliberate, ...] = (
    FORWARD_COMPAT,
    MINOR_COMPAT,
    MIG_IN_USE,
    MPS_SHARING,
    TIME_SLICING,
    CONFIDENTIAL_COMPUTING,
    TUNED_PROFILE,
    PERSISTENCE_BY_UNIT,
)

COMPAT_LIBCUDA = r"/cuda(?:-(\d+)\.(\d+))?/compat(?:/lib(?:\.real)?)?/libcuda\.so\.(\d+)\.\d+(?:\.\d+)?$"
"""A libcuda of the CUDA forward-compatibility package: ``/usr/local/cuda-12.8/compat/libcuda.so.570.124.06`` (the
NGC images' ``/usr/local/cuda/compat/lib.real/`` too)."""

BRANCH_CUDA: dict[int, tuple[int, int]] = {
    525: (12, 0),
    530: (12, 1),
    535: (12, 2),
    545: (12, 3),
    550: (12, 4),
    555: (12, 5),
    560: (12, 6),
    565: (12, 7),
    570: (12, 8),
    575: (12, 9),
    580: (13, 0),
}
"""The CUDA version each driver branch ships (the CUDA Toolkit release notes' table of toolkit and minimum driver);
cuda-compat-X-Y is built from that branch's libcuda."""


class CompatLibrary(Record):
    """A forward-compatibility libcuda a server maps."""

    path: str
    branch: int
    cuda: tuple[int, int] | None
    """The CUDA version it gives: the folder's (cuda-12.8), else its branch's; None when neither tells."""


def compat_library(path: str) -> CompatLibrary | None:
    match = re.search(COMPAT_LIBCUDA, path)
    if match is None:
        return None
    branch = int(match.group(3))
    folder = (int(match.group(1)), int(match.group(2))) if match.group(1) else None
    return CompatLibrary(path, branch, folder or BRANCH_CUDA.get(branch))


def forward_compat_gpu(name: str) -> Support:
    """Whether NVIDIA supports forward compatibility on a GPU of this NVML name: data-center GPUs yes, GeForce and
    TITAN no, workstation RTX and Quadro boards only on select NGC Server Ready SKUs (not told by the name)."""
    if re.search(r"GeForce|TITAN", name, re.IGNORECASE):
        return "no"
    if re.search(r"Quadro|\bRTX\b", name):
        return "unknown"
    return "yes"


def forward_compat_support(names: tuple[str, ...]) -> Support:
    """The least of the GPUs' support (no GPU named: unknown)."""
    seen = {forward_compat_gpu(n) for n in names}
    if not seen:
        return "unknown"
    return "no" if "no" in seen else "unknown" if "unknown" in seen else "yes"


def branch(version: str | None) -> int | None:
    """``550.127.05`` -> 550."""
    match = re.match(r"\s*(\d+)\.", version or "")
    return int(match.group(1)) if match else None


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def minor_compatible(major: int, driver: str | None) -> bool | None:
    """Whether runtimes of CUDA ``major`` run on driver ``driver`` by minor-version compatibility (None: unknown)."""
    least = MINOR_COMPAT_MIN.get(major)
    if least is None or not driver or not re.match(r"\s*\d+\.", driver):
        return None
    return _numbers(driver) >= _numbers(least)
