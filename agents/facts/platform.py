"""Where the audit runs, as a stack of layers: bare metal, a VM guest, a container, and their combinations.

A Docker container in a cloud VM is two layers (``vm`` below ``container``); an LXC container on a Proxmox host is
``bare_metal`` below ``container``. Every fix names the layer it runs on (:func:`fix_where`): a kernel knob seen from
a container belongs to the container's host, a BIOS setting seen from a VM guest to the hypervisor.

Signals, files before commands: ``/proc/cpuinfo``'s hypervisor flag and ``/sys/class/dmi/id`` (VM, hypervisor,
cloud), ``/sys/hypervisor/type``, the kernel command line (microVMs); ``/.dockerenv``, ``/run/.containerenv``,
``/dev/.lxc-boot-id``, PID 1's environment (``container=``, ``KUBERNETES_SERVICE_HOST``) and cgroup, the mounts
(kubelet pod volumes, an overlay root, a devtmpfs /dev), ``/var/run/secrets/kubernetes.io``; and
``systemd-detect-virt`` where it is installed.
"""

from __future__ import annotations

from typing import Literal

from rigaudit.agents.facts.job_step import JobStep, detect_job_step
from rigaudit.agents.facts.os_image import OsImage, detect_os_image
from rigaudit.agents.facts.platform_signals import (
    DMI_FIELDS,
    Dmi,
    cmdline_hypervisor,
    dmi_cloud,
    dmi_hypervisor,
    environ_vars,
    has_hypervisor_flag,
)
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult
from rigaudit.tools.hosts.container_signs import CONTAINER_NAMES, KUBE_SECRETS, Mounts, Signs, container_signs, parse_mounts
from rigaudit.tools.hosts.probe import Probe, command_ref, file_ref
from rigaudit.tools.schema.finding import Where

PlatformKind = Literal["bare_metal", "vm", "lxc", "docker", "container", "unknown"]
LayerKind = Literal["bare_metal", "vm", "container"]
FixTarget = Literal["kernel", "firmware", "hardware", "gpu_driver", "vm_definition", "container_config", "workload"]
"""What a fix changes: the running kernel (sysctl, sysfs, boot line, modules, services), the machine's firmware or
hardware, a setting the NVIDIA driver holds, the VM's definition, the container's runtime options, or the serving
workload itself (its processes, environment, packages)."""

DMI = "/sys/class/dmi/id"


class Layer(Record):
    """One layer of the platform: what it is, what it is called, and how it was told."""

    kind: LayerKind
    name: str
    """bare metal: ``bare metal``; vm: the hypervisor (``kvm``, ``firecracker``, ``microsoft``, ``vmware``...);
    container: the runtime (``docker``, ``podman``, ``kubernetes``, ``containerd``, ``lxc``...)."""
    how: str
    evidence: tuple[str, ...] = ()
    cloud: str | None = None
    """``aws``, ``gcp``, ``azure``, ``oci``... when the SMBIOS strings name a cloud."""
    engine: str | None = None
    """For a Kubernetes pod: the engine below it (``containerd``, ``docker``, ``cri-o``), when known."""

    @property
    def label(self) -> str:
        if self.kind == "bare_metal":
            return f"bare metal ({self.cloud})" if self.cloud else "bare metal"
        if self.kind == "vm":
            return f"VM ({self.name}{', ' + self.cloud if self.cloud else ''})"
        return f"{self.name} container" + (f" ({self.engine})" if self.engine else "")


class Platform(Record):
    """The layers under the audit, outermost (the machine) first, innermost (where the audit runs) last."""

    layers: tuple[Layer, ...]
    lxc_configs: tuple[str, ...] = ()
    """``/etc/pve/lxc/*.conf`` paths: this host runs Proxmox containers."""
    vm_configs: tuple[str, ...] = ()
    """Proxmox ``/etc/pve/qemu-server/*.conf`` and libvirt ``/etc/libvirt/qemu/*.xml``: this host runs VMs."""
    notes: tuple[str, ...] = ()
    lib_mounts: frozenset[str] = frozenset()
    """NVIDIA libraries mounted one by one into the container the audit runs in (the container toolkit's binds of
    the host's files): their version is the host's driver's, not the image's."""
    """Signals that were weighed and set aside (a /.dockerenv left in a VM image...)."""
    job_step: JobStep | None = None
    """The scheduler's job step the audit runs in (:mod:`~rigaudit.agents.facts.job_step`): under Slurm's
    ``ConstrainDevices=yes`` it sees only the GPUs the step was given (:meth:`JobStep.confines` tells from NVML)."""
    image: OsImage | None = None
    """The OS the host's settings persist on: an image-based one (Talos, Bottlerocket...) takes no systemctl or
    /etc fix (:mod:`.os_image`)."""

    # -- the layers --------------------------------------------------------------------------

    @property
    def innermost(self) -> Layer | None:
        return self.layers[-1] if self.layers else None

    @property
    def vm(self) -> Layer | None:
        """The VM layer, when the audit runs in a VM guest (itself or in a container inside one)."""
        return next((layer for layer in self.layers if layer.kind == "vm"), None)

    @property
    def container(self) -> Layer | None:
        return next((layer for layer in reversed(self.layers) if layer.kind == "container"), None)

    @property
    def container_runtime(self) -> str | None:
        """``docker``, ``podman``, ``kubernetes``, ``containerd``, ``lxc``... of the container the audit runs in."""
        return self.container.name if self.container else None

    @property
    def cloud(self) -> str | None:
        return next((layer.cloud for layer in self.layers if layer.cloud), None)

    @property
    def hosts_vms(self) -> bool:
        return bool(self.vm_configs)

    # -- the older flat view (kept: rules and reports read it) -------------------------------

    @property
    def kind(self) -> PlatformKind:
        inner = self.innermost
        if inner is None:
            return "unknown"
        if inner.kind == "container":
            return "lxc" if inner.name == "lxc" else "docker" if inner.name in ("docker", "podman") else "container"
        return inner.kind

    @property
    def virt(self) -> str | None:
        """The innermost layer's name as systemd-detect-virt says it (``kvm``, ``docker``, ``none``)."""
        inner = self.innermost
        if inner is None:
            return None
        return "none" if inner.kind == "bare_metal" else inner.name

    @property
    def vm_below(self) -> str | None:
        """For a container: the hypervisor of the VM it runs in, when one shows."""
        return self.vm.name if self.container is not None and self.vm is not None else None

    @property
    def evidence(self) -> tuple[str, ...]:
        step = self.job_step.evidence if self.job_step is not None else ()
        return tuple(dict.fromkeys([*(ref for layer in self.layers for ref in layer.evidence), *step]))

    @property
    def how(self) -> str:
        if not self.layers:
            return "neither systemd-detect-virt nor /proc/cpuinfo could be read"
        step = self.job_step
        lead = f"{step.how}, given {step.given}, {step.constraint}; " if step is not None else ""
        return lead + "; ".join(layer.how for layer in reversed(self.layers))

    @property
    def label(self) -> str:
        """``bare metal``, ``VM (kvm)``, ``kubernetes container in VM (kvm, aws)``, ``Slurm job 7 step 0 on bare metal``..."""
        if not self.layers:
            return "unknown"
        inner = [layer.label for layer in reversed(self.layers) if not (layer.kind == "bare_metal" and len(self.layers) > 1)]
        step = f"{self.job_step.label} on " if self.job_step is not None else ""
        return step + " in ".join(inner)

    @property
    def is_guest(self) -> bool:
        return self.kind in ("vm", "lxc", "docker", "container")

    @property
    def in_container(self) -> bool:
        return self.container is not None

    @property
    def in_vm(self) -> bool:
        return self.vm is not None

    @property
    def bare_metal(self) -> bool:
        return self.kind == "bare_metal"


def fix_where(platform: Platform, target: FixTarget, *, workload_in_container: bool = False) -> Where:
    """The layer a fix of ``target`` runs on, seen from where the audit ran.

    ``workload_in_container``: the serving process lives in a container although the audit ran on its host.
    """
    if target == "container_config":
        return "container_config"
    if target == "workload":
        return "container" if platform.in_container or workload_in_container else "host"
    if target == "vm_definition":
        return "hypervisor" if platform.in_vm else "host"
    if target in ("firmware", "hardware"):
        if platform.in_vm:
            return "hypervisor"
        return "container_host" if platform.in_container else "host"
    # kernel, gpu_driver: the kernel the audit's processes run on, and the NVIDIA driver loaded into it.
    return "container_host" if platform.in_container else "host"


# -- detection ----------------------------------------------------------------------------------


class _Signals(Record):
    cpuinfo: str | None
    cmdline: str | None
    dmi: Dmi
    xen: str | None
    detect_vm: str | None
    detect_container: str | None
    detect_plain: str | None
    dockerenv: bool
    containerenv: str | None
    containerenv_exists: bool
    lxc_boot_id: bool
    init_env: dict[str, str]
    init_cgroup: str | None
    self_cgroup: str | None
    mounts: Mounts
    kube_secrets: bool


def _answer(cmd: CommandResult) -> str | None:
    """systemd-detect-virt prints its answer even when it exits 1 ("none")."""
    if cmd.error is None and cmd.stdout.strip():
        return cmd.stdout.strip().splitlines()[0]
    return None


async def _signals(probe: Probe) -> _Signals:
    paths = ("/proc/cpuinfo", "/proc/cmdline", "/sys/hypervisor/type", "/proc/1/cgroup", "/proc/self/cgroup")
    cpuinfo, cmdline, xen, init_cgroup, self_cgroup = await probe.gather(*[lambda p=p: probe.text(p) for p in paths])
    dmi_values = await probe.gather(*[lambda f=f: probe.text(f"{DMI}/{f}") for f in DMI_FIELDS])
    dmi = Dmi(**{f: v.strip() if v and v.strip() else None for f, v in zip(DMI_FIELDS, dmi_values, strict=True)})
    detect_vm, detect_container, detect_plain = (
        _answer(r)
        for r in await probe.gather(
            lambda: probe.run(["systemd-detect-virt", "--vm"]),
            lambda: probe.run(["systemd-detect-virt", "--container"]),
            lambda: probe.run(["systemd-detect-virt"]),
        )
    )
    dockerenv, containerenv_exists, lxc_boot_id, kube = await probe.gather(
        lambda: probe.exists("/.dockerenv"),
        lambda: probe.exists("/run/.containerenv"),
        lambda: probe.exists("/dev/.lxc-boot-id"),
        lambda: probe.exists(KUBE_SECRETS),
    )
    containerenv = await probe.text("/run/.containerenv") if containerenv_exists else None
    environ = await probe.read("/proc/1/environ")
    mounts_text, mountinfo = await probe.gather(lambda: probe.text("/proc/mounts"), lambda: probe.text("/proc/self/mountinfo"))
    return _Signals(
        cpuinfo=cpuinfo,
        cmdline=cmdline,
        dmi=dmi,
        xen=xen.strip() if xen else None,
        detect_vm=detect_vm,
        detect_container=detect_container,
        detect_plain=detect_plain,
        dockerenv=dockerenv,
        containerenv=containerenv,
        containerenv_exists=containerenv_exists,
        lxc_boot_id=lxc_boot_id,
        init_env=environ_vars(environ.data),
        init_cgroup=init_cgroup,
        self_cgroup=self_cgroup,
        mounts=parse_mounts(mounts_text, mountinfo),
        kube_secrets=kube,
    )


def _container_layer(s: _Signals) -> tuple[Layer | None, str | None]:
    """The container the audit runs in (or None), and a note on a marker that was set aside."""
    named, named_ref = s.detect_container if s.detect_container != "none" else None, "cmd:systemd-detect-virt --container"
    if named is None and s.detect_plain in CONTAINER_NAMES:
        named, named_ref = s.detect_plain, "cmd:systemd-detect-virt"
    signs, note = container_signs(
        Signs(
            dockerenv=s.dockerenv,
            containerenv=s.containerenv if s.containerenv is not None else ("" if s.containerenv_exists else None),
            lxc_boot_id=s.lxc_boot_id,
            environ=s.init_env,
            init_cgroup=s.init_cgroup,
            self_cgroup=s.self_cgroup,
            mounts=s.mounts,
            kube_secrets=s.kube_secrets,
            detected=named,
            detected_ref=named_ref,
        )
    )
    if not signs:
        return None, note
    names = [sign.runtime for sign in signs]
    how = "; ".join(dict.fromkeys(sign.how for sign in signs))
    refs = tuple(dict.fromkeys(r for sign in signs for r in sign.refs))
    if "kubernetes" in names:
        engine = _engine(names, (s.init_cgroup or "") + (s.self_cgroup or ""))
        return Layer("container", "kubernetes", how, refs, engine=engine), note
    return Layer("container", names[0], how, refs), note


def _engine(names: list[str], cgroups: str) -> str | None:
    """The engine under a Kubernetes pod: containerd, docker (dockershim) or CRI-O."""
    if "cri-containerd" in cgroups or "containerd" in names:
        return "containerd"
    if "crio" in cgroups:
        return "cri-o"
    return "docker" if "docker" in names or "docker" in cgroups else None


def _vm_layer(s: _Signals) -> Layer | None:
    flag = has_hypervisor_flag(s.cpuinfo)
    detected = s.detect_vm if s.detect_vm and s.detect_vm != "none" else None
    if detected is None and s.detect_plain and s.detect_plain != "none" and s.detect_plain not in CONTAINER_NAMES:
        detected = s.detect_plain
    from_dmi = dmi_hypervisor(s.dmi)
    cloud = dmi_cloud(s.dmi)
    refs: list[str] = []
    hows: list[str] = []
    if flag:
        refs.append(file_ref("/proc/cpuinfo"))
        hows.append("the CPU reports the hypervisor flag")
    if detected:
        refs.append(command_ref(["systemd-detect-virt", "--vm"]))
        hows.append(f"systemd-detect-virt: {detected}")
    if s.xen and s.xen.lower() == "xen":
        refs.append(file_ref("/sys/hypervisor/type"))
        hows.append("/sys/hypervisor/type: xen")
    if from_dmi and (flag or detected or not s.cpuinfo):
        refs.append(file_ref(f"{DMI}/sys_vendor"))
        hows.append(f"DMI: {s.dmi.text}")
    elif from_dmi and from_dmi in ("kvm", "vmware", "xen", "microsoft", "oracle"):
        # A hidden hypervisor flag (kvm hidden=on, -cpu host,-hypervisor, common with GPU passthrough) still
        # leaves the virtual machine's SMBIOS strings.
        refs.append(file_ref(f"{DMI}/sys_vendor"))
        hows.append(f"DMI: {s.dmi.text} (the CPU hides the hypervisor flag)")
    if not hows:
        return None
    name = detected or ("xen" if s.xen == "xen" else None) or from_dmi or cmdline_hypervisor(s.cmdline)
    if cmdline_hypervisor(s.cmdline) == "firecracker":
        name = "firecracker"
        hows.append("the kernel command line names Firecracker")
        refs.append(file_ref("/proc/cmdline"))
    return Layer("vm", name or "unknown-hypervisor", "; ".join(hows), tuple(refs), cloud=cloud)


async def _configs(probe: Probe) -> tuple[tuple[str, ...], tuple[str, ...]]:
    lxc, qemu, libvirt = await probe.gather(
        lambda: probe.list_dir("/etc/pve/lxc"),
        lambda: probe.list_dir("/etc/pve/qemu-server"),
        lambda: probe.list_dir("/etc/libvirt/qemu"),
    )
    lxc_configs = tuple(f"/etc/pve/lxc/{n}" for n in (lxc.entries or ()) if n.endswith(".conf"))
    vms = tuple(f"/etc/pve/qemu-server/{n}" for n in (qemu.entries or ()) if n.endswith(".conf"))
    vms += tuple(f"/etc/libvirt/qemu/{n}" for n in (libvirt.entries or ()) if n.endswith(".xml"))
    return lxc_configs, vms


async def detect_platform(probe: Probe) -> Platform:
    """The layers under the audit, detected once per audit (:meth:`Probe.derived`): every investigator may ask."""
    return await probe.derived("platform", _detect_platform)


async def _detect_platform(probe: Probe) -> Platform:
    s = await _signals(probe)
    lxc_configs, vm_configs = await _configs(probe)
    container, note = _container_layer(s)
    vm = _vm_layer(s)
    notes = (note,) if note else ()
    layers: list[Layer] = []
    if vm is not None:
        layers.append(vm)
    elif s.cpuinfo is not None or s.detect_vm == "none" or s.detect_plain == "none" or s.dmi.present:
        how = "no hypervisor flag, no VM firmware strings"
        if s.dmi.present:
            how += f" (DMI: {s.dmi.text})"
        refs = (file_ref("/proc/cpuinfo"),) + ((file_ref(f"{DMI}/sys_vendor"),) if s.dmi.present else ())
        layers.append(Layer("bare_metal", "bare metal", how, refs, cloud=dmi_cloud(s.dmi)))
    if container is not None:
        layers.append(container)
    lib_mounts = s.mounts.lib_mounts if container is not None else frozenset()
    step = await detect_job_step(probe, s.self_cgroup)
    image = await detect_os_image(probe, container is not None)
    return Platform(tuple(layers), lxc_configs, vm_configs, notes, lib_mounts, step, image)
