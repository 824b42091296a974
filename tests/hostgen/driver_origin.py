"""Hosts whose driver comes from somewhere other than a DKMS build, and DKMS builds that fail, as faults.

- ``gpu_operator``: the NVIDIA GPU Operator's driver container loads the modules, mounts its root at
  ``/run/nvidia/driver`` and runs nv-fabricmanager and nvidia-persistenced inside it (host-visible processes in a
  kubepods cgroup); the host has no driver package, no nvidia.ko in its modules.dep, no libnvidia-ml and no units.
- ``vfio_passthrough``: a KVM host whose GPUs and NVSwitches are bound to vfio-pci for an 8-GPU guest (the Fabric
  Manager user guide's full-passthrough model): no NVIDIA module loaded, no daemon, libvirtd running.
- ``precompiled_newer_kernel``: Ubuntu's precompiled modules (no DKMS) and a newer kernel installed without its
  ``linux-modules-nvidia`` package.
- ``dkms_build_failed``: DKMS's build for a newer kernel failed to compile (Linux 6.14 removed ``drm_driver.date``;
  NVIDIA/open-gpu-kernel-modules PR 778), its make.log says so.
- ``mok_pending``: Secure Boot on, the DKMS modules signed by a Machine Owner Key queued for enrolment and not yet
  enrolled: the kernel refuses nvidia.ko ("Loading of module with unavailable key is rejected").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tests.hostgen import kernel as kn
from tests.hostgen import platform as pf
from tests.hostgen.build import Built
from tests.hostgen.faults import _add_dmesg, _nvidia_ko_not_loaded
from tests.hostgen.procs import Proc, write_proc
from tests.hostgen.spec import Fault, HostSpec

_KUBEPODS = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod7c1e2a.slice/cri-containerd-4f2a9b.scope\n"
_DRIVER_CTR_NS = "mnt:[4026532999]"


def _fault(spec: HostSpec, suffix: str, summary: str, apply: Callable[[Built], None], **changes: object) -> HostSpec:
    changed = replace(spec, **changes) if changes else spec  # type: ignore[arg-type]
    return replace(
        changed,
        name=f"{spec.name}+{suffix}",
        summary=f"{spec.summary}; FAULT: {summary}",
        faults=(*changed.faults, Fault(suffix, summary, apply)),
    )


def _no_unit(built: Built, unit: str) -> None:
    tree = built.tree
    tree.command(("systemctl", "is-active", unit), "inactive\n", exit_code=4)
    missing = f"Unit {unit}.service could not be found.\n"
    tree.command(("systemctl", "status", unit, "--no-pager"), "", exit_code=4, stderr=missing)
    tree.command(("journalctl", "-u", unit, "-n", "50", "--no-pager"), "-- No entries --\n")


def _operator(built: Built, *, fabricmanager: bool) -> None:
    tree, release = built.tree, built.spec.os.kernel
    tree.file(f"/lib/modules/{release}/modules.dep", kn.modules_dep(release, [], zstd=False))
    libdir = pf.driver_libdir(built)
    for path in [p for p in [*tree.files, *tree.links] if p.startswith((f"{libdir}/libnvidia-ml", f"{libdir}/libcuda"))]:
        tree.remove(path)
    for key in [k for k in tree.nvml if k[0] != "nvmlInit"]:
        del tree.nvml[key]
    tree.call("nvmlInit", (), error="LIBRARY_NOT_FOUND")
    root, version = "/run/nvidia/driver", built.spec.driver.version
    tree.file(f"{root}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{version}", b"\x7fELF\x02\x01\x01")
    tree.file(f"{root}/usr/bin/nvidia-smi", b"\x7fELF\x02\x01\x01")
    tree.file(f"{root}/lib/modules/{release}/kernel/drivers/video/nvidia.ko", b"\x7fELF")
    tree.file("/run/nvidia/validations/driver-ready", "IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n")
    tree.remove("/var/log/fabricmanager.log")  # the container's, under its root
    daemons = ("nv-fabricmanager", "nvidia-persistenced")
    for pid in [p for p, proc in built.procs.items() if proc.argv and proc.argv[0].endswith(daemons)]:
        del built.procs[pid]  # the host units' daemons: the driver container's run instead
        tree.remove(f"/proc/{pid}")
    argvs = [("nvidia-persistenced", "--persistence-mode")]
    if fabricmanager:
        argvs.append(("/usr/bin/nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg"))
    for pid, argv in enumerate(argvs, start=2410):
        built.procs[pid] = Proc(pid, argv, cgroup=_KUBEPODS, mnt_ns=_DRIVER_CTR_NS, exe=argv[0], vm_kib=24000)
        write_proc(tree, built.procs[pid])
    for unit in ("nvidia-fabricmanager", "nvidia-persistenced"):
        _no_unit(built, unit)
    tree.command(("dpkg-query", "-W", "nvidia-fabricmanager*"), "", exit_code=1)


def gpu_operator(spec: HostSpec, *, fabricmanager: bool = True) -> HostSpec:
    """The GPU Operator's driver container runs the driver (and, with ``fabricmanager``, the fabric manager)."""
    suffix = "gpu-operator" if fabricmanager else "gpu-operator-fm-down"
    summary = "driver, fabric manager and persistenced from the GPU Operator's driver container"
    if not fabricmanager:
        summary += "; its nv-fabricmanager is not running"
    return _fault(
        spec, suffix, summary, lambda b: _operator(b, fabricmanager=fabricmanager), driver=replace(spec.driver, dkms=False)
    )


def _vfio(built: Built) -> None:
    tree = built.tree
    _nvidia_ko_not_loaded(built)
    for bdf in [g.bdf for g in built.gpu_states_all] + built.nvswitch_bdfs:
        for path, target in list(tree.links.items()):
            if path.endswith(f"/{bdf}/driver"):
                tree.link(path, target.rsplit("/", 1)[0] + "/vfio-pci")
    modules = tree.files.get("/proc/modules", b"").decode()
    tree.file(
        "/proc/modules",
        modules + "vfio_pci 16384 8 - Live 0x0000000000000000\n"
        "vfio_pci_core 94208 1 vfio_pci, Live 0x0000000000000000\n"
        "vfio_iommu_type1 49152 1 - Live 0x0000000000000000\n"
        "vfio 61440 3 vfio_pci_core,vfio_iommu_type1, Live 0x0000000000000000\n"
        "kvm_intel 487424 16 - Live 0x0000000000000000\n",
    )
    for path in [p for p in tree.files if p.startswith("/dev/nvidia")]:
        tree.remove(path)
    tree.command(("systemctl", "is-active", "libvirtd"), "active\n")
    guests = " Id   Name         State\n-----------------------------\n 1    llm-hgx-8g   running\n"
    tree.command(("virsh", "list", "--all"), guests)
    _add_dmesg(built, ["VFIO - User Level meta-driver version: 0.3"], 6.0)


def vfio_passthrough(spec: HostSpec) -> HostSpec:
    os = replace(spec.os, cmdline=spec.os.cmdline + " intel_iommu=on iommu=pt vfio-pci.ids=10de:2330,10de:22a3")
    driver = replace(spec.driver, fabricmanager="inactive", persistence=False, persistenced="inactive")
    summary = "KVM host: GPUs and NVSwitches bound to vfio-pci for a guest (full passthrough)"
    return _fault(spec, "vfio-passthrough", summary, _vfio, os=os, processes=(), iommu="identity", driver=driver)


def _newer_kernel(built: Built, release: str, *, zstd: bool) -> None:
    tree = built.tree
    tree.file(f"/boot/vmlinuz-{release}", b"\x4d\x5a")
    tree.file(f"/boot/config-{release}", "CONFIG_X86_INTEL_PSTATE=y\nCONFIG_X86_AMD_PSTATE=y\n")
    tree.file(f"/lib/modules/{release}/modules.dep", kn.modules_dep(release, [], zstd=zstd))


def precompiled_newer_kernel(spec: HostSpec, release: str = "5.15.0-127-generic") -> HostSpec:
    summary = f"Ubuntu's precompiled NVIDIA modules for the running kernel; {release} installed without them"
    apply = lambda b: _newer_kernel(b, release, zstd=False)  # noqa: E731
    return _fault(spec, "precompiled-newer-kernel", summary, apply, driver=replace(spec.driver, dkms=False))


def _failed_build(built: Built, release: str) -> None:
    _newer_kernel(built, release, zstd=True)
    version = built.spec.driver.version
    built.tree.directory(f"/lib/modules/{release}/build")
    build = f"/var/lib/dkms/nvidia/{version}/build"
    built.tree.file(
        f"{build}/make.log",
        f"DKMS make.log for nvidia-{version} for kernel {release} (x86_64)\n"
        f"Tue Dec  1 06:12:41 UTC 2026\n"
        f"make[1]: Entering directory '/usr/src/linux-headers-{release}'\n"
        f"{build}/nvidia-drm/nvidia-drm-drv.c:1920:6: error: 'struct drm_driver' has no member named 'date'\n"
        ' 1920 |     .date            = "20160202",\n'
        "make[3]: *** [scripts/Makefile.build:203: nvidia-drm/nvidia-drm-drv.o] Error 1\n",
    )


def dkms_build_failed(spec: HostSpec, release: str = "6.14.0-29-generic") -> HostSpec:
    summary = f"DKMS's build of the NVIDIA module for {release} failed to compile (make.log)"
    return _fault(spec, "dkms-build-failed", summary, lambda b: _failed_build(b, release))


def _mok_pending(built: Built) -> None:
    _nvidia_ko_not_loaded(built)
    _add_dmesg(built, ["Loading of module with unavailable key is rejected"] * 3, 12.0)
    tree = built.tree
    # shim's MokNew variable, written by `mokutil --import` until MokManager enrolls the key at the next boot
    tree.file("/sys/firmware/efi/efivars/MokNew-605dab50-e046-4300-abb6-3dd810dd8b23", b"\x07\x00\x00\x00" + b"\xa1" * 60)


def mok_pending(spec: HostSpec) -> HostSpec:
    summary = "Secure Boot on; the DKMS modules are signed by a MOK queued and not enrolled: nvidia.ko refused"
    return _fault(spec, "mok-pending", summary, _mok_pending, os=replace(spec.os, secure_boot=True), processes=())
