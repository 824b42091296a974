"""The host's CDI spec for its GPUs (``HostSpec.cdi``), as ``nvidia-ctk cdi generate`` writes it, and NVIDIA Container
Toolkit 1.18's ``nvidia-cdi-refresh`` units.

From public sources: the NVIDIA Container Toolkit's CDI guide (``nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml``;
the two usual folders /etc/cdi and /var/run/cdi; "if you change the device or CUDA driver configuration, you must
generate a new CDI specification", a driver upgrade being such a change; from 1.18 ``nvidia-cdi-refresh`` writes
/var/run/cdi/nvidia.yaml when the driver is installed or upgraded and at boot, triggered by a path unit watching
``/lib/modules/%v/modules.dep``: NVIDIA/nvidia-container-toolkit PR 1229); the spec's shape (``cdiVersion``,
``kind: nvidia.com/gpu``, a device per index, UUID and ``all``, common ``containerEdits`` with the device nodes, the
``nvidia-cdi-hook`` ``create-symlinks`` and ``update-ldcache`` hooks, and bind mounts of the driver's libraries,
binaries, persistenced socket and GSP firmware at their host paths, each named with the driver's version): the specs
users post in the toolkit's and Podman's issues (toolkit issue 692, Igalia/webkit-container-sdk issue 23: a container
that no longer starts after a driver upgrade, ``crun: error stat'ing file .../libEGL_nvidia.so.535.161.07``). The
list of libraries is the compute subset (no graphics libraries on a headless server); which ones a given driver
package installs is of the form those specs show, not read off one host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen import platform as pf

if TYPE_CHECKING:
    from tests.hostgen.build import Built

LIBRARIES = (
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-allocator.so",
    "libnvidia-cfg.so",
    "libnvidia-ml.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-ptxjitcompiler.so",
)
BINARIES = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "nvidia-debugdump", "nvidia-persistenced", "nvidia-smi")
FIRMWARE = ("gsp_ga10x.bin", "gsp_tu10x.bin")
OPTIONS = "    options:\n    - ro\n    - nosuid\n    - nodev\n    - bind\n"
REFRESH_PATH = (
    "[Unit]\nDescription=Trigger CDI refresh on NVIDIA driver or toolkit install / upgrade events\n\n"
    "[Path]\nPathChanged=/lib/modules/%v/modules.dep\nPathChanged=/lib/modules/%v/modules.dep.bin\n"
    "PathChanged=/usr/bin/nvidia-ctk\n\n[Install]\nWantedBy=multi-user.target\n"
)
REFRESH_SERVICE = (
    "[Unit]\nDescription=Refresh NVIDIA CDI specification file\n\n"
    "[Service]\nType=oneshot\n"
    "ExecStart=/usr/bin/nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml\n\n"
    "[Install]\nWantedBy=multi-user.target\n"
)
"""The path unit as the toolkit ships it (PR 1229); the service's lines are of the form its CDI guide describes (a
oneshot that runs ``nvidia-ctk cdi generate`` for /var/run/cdi/nvidia.yaml), not read off the packaged file."""
UNIT_DIR = "/usr/lib/systemd/system"


def _mount(path: str) -> str:
    return f"  - containerPath: {path}\n    hostPath: {path}\n{OPTIONS}"


def _nodes(paths: list[str], indent: str) -> str:
    return "".join(f"{indent}- path: {p}\n" for p in paths)


def spec_text(built: Built) -> str:
    """The spec ``nvidia-ctk cdi generate`` writes for this host's GPUs and the driver it was generated for."""
    cdi = built.spec.cdi
    assert cdi is not None
    version = cdi.driver or built.spec.driver.userspace or built.spec.driver.version
    libdir = pf.driver_libdir(built)
    common = ["/dev/nvidiactl", *(("/dev/nvidia-uvm", "/dev/nvidia-uvm-tools") if cdi.uvm else ())]
    devices = []
    for g in built.gpu_states:
        for name in (f'"{g.index}"', f"GPU-{g.uuid}"):
            devices.append(f"- containerEdits:\n    deviceNodes:\n{_nodes([f'/dev/nvidia{g.index}'], '    ')}  name: {name}\n")
    every = [f"/dev/nvidia{g.index}" for g in built.gpu_states]
    devices.append(f"- containerEdits:\n    deviceNodes:\n{_nodes(every, '    ')}  name: all\n")
    hook = "    hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n"
    mounts = [_mount(f"{libdir}/{lib}.{version}") for lib in LIBRARIES]
    mounts += [_mount(f"/usr/bin/{b}") for b in BINARIES]
    mounts.append(_mount("/run/nvidia-persistenced/socket").replace("ro\n    - nosuid", "ro\n    - nosuid\n    - noexec"))
    mounts += [_mount(f"/lib/firmware/nvidia/{version}/{f}") for f in FIRMWARE]
    return (
        "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n"
        + _nodes(common, "  ")
        + "  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n  hooks:\n"
        + "  - args:\n    - nvidia-cdi-hook\n    - create-symlinks\n    - --link\n"
        + f"    - libcuda.so.1::{libdir}/libcuda.so\n{hook}"
        + f"  - args:\n    - nvidia-cdi-hook\n    - update-ldcache\n    - --folder\n    - {libdir}\n{hook}"
        + "  mounts:\n"
        + "".join(mounts)
        + "devices:\n"
        + "".join(devices)
        + "kind: nvidia.com/gpu\n"
    )


def write_cdi(built: Built) -> None:
    """The spec, the driver files it names as the installed driver has them, the toolkit's units (a host)."""
    cdi = built.spec.cdi
    if cdi is None or built.container:
        return
    tree = built.tree
    installed = built.spec.driver.userspace or built.spec.driver.version
    libdir = pf.driver_libdir(built)
    for lib in LIBRARIES:
        tree.file(f"{libdir}/{lib}.{installed}", b"\x7fELF\x02\x01\x01")
    for binary in BINARIES:
        tree.file(f"/usr/bin/{binary}", b"\x7fELF\x02\x01\x01")
    for name in FIRMWARE:
        tree.file(f"/lib/firmware/nvidia/{installed}/{name}", b"\x00")
    tree.unreadable["/run/nvidia-persistenced/socket"] = "NOT_RECORDED"
    tree.file("/usr/bin/nvidia-ctk", b"\x7fELF\x02\x01\x01")
    tree.command(("nvidia-ctk", "--version"), f"NVIDIA Container Toolkit CLI version {cdi.toolkit}\ncommit: 0d22f3b2\n")
    tree.file(cdi.path, spec_text(built))
    if cdi.refresh or cdi.refresh_disabled:
        tree.file(f"{UNIT_DIR}/nvidia-cdi-refresh.path", REFRESH_PATH)
        tree.file(f"{UNIT_DIR}/nvidia-cdi-refresh.service", REFRESH_SERVICE)
    if cdi.refresh:
        tree.link("/etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.path", f"{UNIT_DIR}/nvidia-cdi-refresh.path")
    state = "active" if cdi.refresh else "inactive"
    enabled = "enabled\n" if cdi.refresh else "disabled\n" if cdi.refresh_disabled else ""
    missing = "Failed to get unit file state for nvidia-cdi-refresh.path: No such file or directory\n"
    tree.command(
        ("systemctl", "is-enabled", "nvidia-cdi-refresh.path"),
        enabled,
        exit_code=0 if cdi.refresh else 1,
        stderr="" if enabled else missing,
    )
    tree.command(("systemctl", "is-active", "nvidia-cdi-refresh.path"), state + "\n", exit_code=0 if cdi.refresh else 3)
