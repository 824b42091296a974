"""Pure readers of the signals that tell bare metal, VM guests and containers apart.

Each function takes the text of one file (or a few) and returns what it says; :mod:`.platform` reads the files and
stacks the answers into layers. Nothing here reads a host.
"""

from __future__ import annotations

from rigaudit.tools.core.record import Record

# -- VM guests --------------------------------------------------------------------------------

AZURE_ASSET_TAG = "7783-7084-3265-9085-8269-3286-77"
"""The chassis asset tag every Azure VM (and Azure bare-metal GPU node) carries."""


class Dmi(Record):
    """The SMBIOS strings of ``/sys/class/dmi/id`` (absent in DMI-less microVMs such as Firecracker)."""

    sys_vendor: str | None = None
    product_name: str | None = None
    product_version: str | None = None
    bios_vendor: str | None = None
    bios_version: str | None = None
    board_vendor: str | None = None
    chassis_vendor: str | None = None
    chassis_asset_tag: str | None = None

    @property
    def present(self) -> bool:
        return any(v for v in (self.sys_vendor, self.product_name, self.bios_vendor, self.board_vendor))

    @property
    def text(self) -> str:
        """``sys_vendor product_name`` as a person reads it."""
        return " ".join(v for v in (self.sys_vendor, self.product_name) if v) or "no DMI strings"

    def _blob(self) -> str:
        values = (
            self.sys_vendor,
            self.product_name,
            self.product_version,
            self.bios_vendor,
            self.bios_version,
            self.board_vendor,
            self.chassis_vendor,
        )
        return " | ".join(v for v in values if v).lower()


DMI_FIELDS = (
    "sys_vendor",
    "product_name",
    "product_version",
    "bios_vendor",
    "bios_version",
    "board_vendor",
    "chassis_vendor",
    "chassis_asset_tag",
)

_CLOUDS: tuple[tuple[str, str], ...] = (
    ("amazon ec2", "aws"),
    ("google compute engine", "gcp"),
    ("google", "gcp"),
    ("alibaba cloud", "alibaba"),
    ("tencent cloud", "tencent"),
    ("oraclecloud", "oci"),
    ("digitalocean", "digitalocean"),
    ("hetzner", "hetzner"),
    ("scaleway", "scaleway"),
    ("openstack", "openstack"),
    ("huawei cloud", "huawei"),
)
"""Substrings of the DMI strings (lower case) and the cloud they name (first match wins)."""

_HYPERVISORS: tuple[tuple[str, str], ...] = (
    ("firecracker", "firecracker"),
    ("cloud hypervisor", "cloud-hypervisor"),
    ("vmware", "vmware"),
    ("virtualbox", "oracle"),
    ("innotek", "oracle"),
    ("microsoft corporation", "microsoft"),
    ("hyper-v", "microsoft"),
    ("hvm domu", "xen"),
    ("xen", "xen"),
    ("amazon ec2", "amazon"),
    ("google", "google"),
    ("parallels", "parallels"),
    ("bhyve", "bhyve"),
    ("nutanix", "kvm"),
    ("openstack", "kvm"),
    ("qemu", "kvm"),
    ("kvm", "kvm"),
    ("bochs", "kvm"),
    ("seabios", "kvm"),
    ("standard pc (q35", "kvm"),
    ("standard pc (i440fx", "kvm"),
)
"""Substrings of the DMI strings (lower case) and the hypervisor they name, in systemd-detect-virt's words."""


def dmi_cloud(dmi: Dmi) -> str | None:
    """The cloud provider the SMBIOS strings name (``aws``, ``gcp``, ``azure``, ``oci``...), if any."""
    if dmi.chassis_asset_tag and dmi.chassis_asset_tag.strip() == AZURE_ASSET_TAG:
        return "azure"
    if dmi.chassis_asset_tag and "oraclecloud" in dmi.chassis_asset_tag.lower():
        return "oci"
    blob = dmi._blob()
    return next((cloud for marker, cloud in _CLOUDS if marker in blob), None)


def dmi_hypervisor(dmi: Dmi) -> str | None:
    """The hypervisor the SMBIOS strings name, or None on physical machines' strings."""
    blob = dmi._blob()
    if "microsoft corporation" in blob and "virtual machine" not in blob:
        return None  # Microsoft Surface and other physical Microsoft machines
    if "amazon ec2" in blob and ".metal" in blob:
        return None  # an EC2 bare-metal instance carries Amazon's strings too
    return next((name for marker, name in _HYPERVISORS if marker in blob), None)


def has_hypervisor_flag(cpuinfo: str | None) -> bool:
    """CPUID's hypervisor bit, as the kernel lists it in ``/proc/cpuinfo`` flags."""
    if cpuinfo is None or "hypervisor" not in cpuinfo:  # a physical host's 128-CPU cpuinfo is not split 48 times
        return False
    return any(line.startswith("flags") and "hypervisor" in line.partition(":")[2].split() for line in cpuinfo.splitlines())


def cmdline_hypervisor(cmdline: str | None) -> str | None:
    """A microVM that leaves its mark on the kernel command line (Firecracker's init, virtio-mmio devices)."""
    text = cmdline or ""
    if "firecracker" in text.lower():
        return "firecracker"
    if "virtio_mmio.device=" in text:
        return "microvm"
    return None


# -- containers (read by rigaudit.tools.hosts.container_signs, shared with the benchmarks' container token) ----------


def environ_vars(data: bytes | None) -> dict[str, str]:
    """``/proc/PID/environ`` (NUL-separated) as a dict."""
    out: dict[str, str] = {}
    for item in (data or b"").split(b"\x00"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and key:
            out[key] = value
    return out
