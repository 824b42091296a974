"""More host kinds (issue 33): hosts whose verdicts rest on premises and deliberate configurations, kept apart from
``archetypes.ALL`` so that their tests live in their own small files (tests/test_kinds_*.py) and share fixtures.

Each is a few lines over the parts of ``archetypes``; where no public source shows a detail, a comment says so.
"""

from __future__ import annotations

from dataclasses import replace

from tests.hostgen.archetypes import ALL8, DOCKER_BM, GEFORCE, HGX_H100, IB_ENV, TIB_KIB, XEON_8462, vllm
from tests.hostgen.spec import DriverSpec, GpuSpec, HostSpec, NicSpec, OsSpec, PlatformSpec, ProcessSpec

COMPAT_CUDA = "/usr/local/cuda-12.8/compat"
COMPAT_LIBCUDA = f"{COMPAT_CUDA}/libcuda.so.570.124.06"
"""cuda-compat-12-8 is built from the 570 branch (NVIDIA's CUDA compatibility guide: each cuda-compat-X-Y package is
generated from the driver that ships CUDA X.Y); vLLM's CUDA 12.8 images install it under /usr/local/cuda-12.8/compat."""
COMPAT_ENV = (
    ("LD_LIBRARY_PATH", f"{COMPAT_CUDA}:/usr/local/nvidia/lib:/usr/local/nvidia/lib64"),
    ("NVIDIA_VISIBLE_DEVICES", "all"),
    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
)


def _compat_server(model: str, gpus: tuple[int, ...], *, mib: int) -> ProcessSpec:
    return replace(
        vllm(model, gpus, mib=mib, env=COMPAT_ENV),
        compat=COMPAT_LIBCUDA,
        torch="2.7.0+cu128",
        torch_cuda="12.8",
        nccl="2.26.2",
    )


DC_FORWARD_COMPAT = replace(
    DOCKER_BM,
    name="docker-h100-forward-compat",
    summary="Docker container (NVIDIA Container Toolkit, --gpus all --ipc=host) with a CUDA 12.8 vLLM image on a "
    "bare-metal HGX H100 host that stays on the 535 LTS driver (CUDA 12.2): the image's cuda-compat-12-8 libcuda "
    "(570 branch, /usr/local/cuda-12.8/compat, on LD_LIBRARY_PATH and in ld.so.conf.d) runs CUDA 12.8 over the "
    "535 kernel module: CUDA forward compatibility on data-center GPUs",
    hostname="7a3c91e0b2d4",
    driver=DriverSpec("535.216.03", fabricmanager="active", peermem=True, cuda=12020),
    processes=(_compat_server("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240),),
    expect="healthy and deliberate: forward compatibility is NVIDIA's supported way to run a newer CUDA on an older "
    "data-center driver; nothing is to be installed",
)

GEFORCE_FORWARD_COMPAT = replace(
    GEFORCE,
    name="geforce-container-forward-compat",
    summary="Docker container (--gpus all --ipc=host) on the 4x RTX 4090 workstation, whose host driver is 535 "
    "(CUDA 12.2), running the same CUDA 12.8 image with its cuda-compat libcuda on LD_LIBRARY_PATH: forward "
    "compatibility, which NVIDIA does not support on GeForce (CUDA init: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)",
    hostname="3f0e8d27c6a1",
    driver=DriverSpec("535.183.01", open=False, cuda=12020),
    platform=PlatformSpec(container="docker", shm_bytes=None),
    processes=(
        replace(
            _compat_server("/models/Qwen2.5-32B-Instruct-AWQ", (0, 1, 2, 3), mib=22000),
            env=(*COMPAT_ENV, ("NCCL_P2P_DISABLE", "1")),
        ),
    ),
    expect="problem: forward compatibility on GeForce fails CUDA init; the fix drops the compat path (or matches the "
    "image's CUDA to the driver), it installs no libraries",
)

RHEL94 = OsSpec(
    "rhel-9.4",
    "5.14.0-427.13.1.el9_4.x86_64",
    cmdline="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rhgb quiet",
    thp="always",
    swappiness=10,
    memory_kib=TIB_KIB,
    old_kernels=("5.14.0-362.24.1.el9_3.x86_64",),
    tuned="throughput-performance",
)
"""RHEL 9.4 as installed on a server: tuned active with throughput-performance (RHEL's default server profile), which
sets THP always and vm.swappiness 10; boot lines edited with grubby (BLS entries)."""

RHEL9_TUNED = replace(
    HGX_H100,
    name="rhel9-hgx-h100-tuned",
    summary="Dell PowerEdge XE9680 (HGX H100 8-GPU), 2x Xeon Platinum 8462Y+, RHEL 9.4 (5.14.0-427 el9 kernel) with "
    "tuned's throughput-performance profile active and grubby for the boot line, NVIDIA's open kernel module 550 "
    "(precompiled kmod stream, no DKMS) with fabric manager, 8x ConnectX-7 NDR with MLNX_OFED and nvidia_peermem; "
    "vLLM at TP 8",
    hostname="xe9680-h100-11",
    cpu=XEON_8462,
    os=RHEL94,
    gpus=GpuSpec("h100-sxm", 8, nvswitches=4),
    driver=DriverSpec("550.127.05", open=True, fabricmanager="active", peermem=True, dkms=False, cuda=12040),
    nics=NicSpec("cx7", 8),
    platform=PlatformSpec(
        dmi=(
            ("sys_vendor", "Dell Inc."),
            ("product_name", "PowerEdge XE9680"),
            ("board_vendor", "Dell Inc."),
            ("board_name", "0DCN1X"),
            ("bios_vendor", "Dell Inc."),
            ("bios_version", "2.1.5"),
            ("bios_date", "04/12/2024"),
        )
    ),
    processes=(vllm("/models/Llama-3.1-70B-Instruct", ALL8, mib=73240, env=IB_ENV),),
    expect="healthy: the tunables are tuned's (throughput-performance); a fix for any of them is a tuned profile",
)
"""The board_name and BIOS version of a XE9680 are not from a public source read here (placeholders of Dell's form)."""

KINDS: dict[str, HostSpec] = {spec.name: spec for spec in (DC_FORWARD_COMPAT, GEFORCE_FORWARD_COMPAT, RHEL9_TUNED)}
