"""How a runtime fix is made to survive a reboot, as the advice a person runs after it.

Each setting gets a file of its own, written whole (``>``): following the advice of several fixes, in any order and
more than once, leaves every setting in place (one shared file written with ``>`` by one fix and ``>>`` by another
lost the earlier line). On an image-based OS (:mod:`rigaudit.agents.facts.os_image`) the advice names that OS's own
configuration instead: Talos' machine config, Bottlerocket's settings API, a Flatcar/CoreOS Butane config.
"""

from __future__ import annotations

import json

from rigaudit.agents.facts.os_image import OsImage

TALOS_PATCH = "talosctl patch machineconfig --nodes <node> --patch '{patch}'"
BOTTLEROCKET_SET = "apiclient set --json '{patch}'"


def sysctl_file(key: str) -> str:
    """``vm.zone_reclaim_mode`` -> ``/etc/sysctl.d/90-rigaudit-zone-reclaim-mode.conf``."""
    return f"/etc/sysctl.d/90-rigaudit-{key.rsplit('.', 1)[-1].replace('_', '-')}.conf"


def sysctl_persist(key: str, value: str, image: OsImage | None = None) -> str:
    """The advice that keeps ``key = value`` across reboots (and loads it now, where a file does)."""
    path = sysctl_file(key)
    line = f"echo '{key} = {value}' > {path} && sysctl -p {path}"
    if image is None or not image.image_based:
        return line
    if image.kind == "talos":
        patch = json.dumps({"machine": {"sysctls": {key: value}}})
        return f"Talos has no /etc/sysctl.d: set machine.sysctls in the machine config: {TALOS_PATCH.format(patch=patch)}"
    if image.kind == "bottlerocket":
        patch = json.dumps({"settings": {"kernel": {"sysctl": {key: value}}}})
        return (
            "Bottlerocket's /etc is generated from its settings: set settings.kernel.sysctl from the admin or "
            f"control container ({BOTTLEROCKET_SET.format(patch=patch)}) or in the node's user data"
        )
    if image.kind in ("flatcar", "coreos"):
        return (
            f"{line}; /etc persists here, but a node provisioned again from its Ignition config loses it: add "
            f"{path} to the Butane config (storage.files) too"
        )
    return f"this OS is image-based ({image.how}): set {key} = {value} in its machine configuration; /etc/sysctl.d is not kept"


def module_persist(module: str, image: OsImage | None = None) -> str:
    """The advice that loads kernel module ``module`` at every boot."""
    line = f"echo {module} > /etc/modules-load.d/{module.replace('_', '-')}.conf"
    if image is None or not image.image_based:
        return line
    if image.kind == "talos":
        patch = json.dumps({"machine": {"kernel": {"modules": [{"name": module}]}}})
        return f"Talos loads modules from its machine config (machine.kernel.modules): {TALOS_PATCH.format(patch=patch)}"
    if image.kind == "bottlerocket":
        patch = json.dumps({"settings": {"kernel": {"modules": {module: {"autoload": True}}}}})
        return f"Bottlerocket loads modules from its settings: {BOTTLEROCKET_SET.format(patch=patch)}"
    if image.kind in ("flatcar", "coreos"):
        return f"{line}; add that file to the Butane config (storage.files) too, for nodes provisioned again"
    return f"this OS is image-based ({image.how}): load {module} from its machine configuration"


def boot_script_persist(name: str, script: str, image: OsImage | None) -> str | None:
    """How an image-based OS runs ``script`` (sysfs writes) at boot; None on a distribution (a systemd unit does)."""
    if image is None or not image.image_based or image.kind in ("flatcar", "coreos"):
        return None
    if image.kind == "talos":
        return (
            "Talos has no systemd units to add: /sys files are written at boot by the machine config's machine.sysfs "
            "(one key per path, dots for slashes; talosctl patch machineconfig), anything else by a system extension's "
            f"service; what {name} would run: {script}"
        )
    if image.kind == "bottlerocket":
        return (
            "Bottlerocket runs no added units: run the same writes from a bootstrap container "
            f"(settings.bootstrap-containers, mode always, superpowered); what {name} would run: {script}"
        )
    return f"this OS is image-based ({image.how}): run at boot from its machine configuration: {script}"


def service_persist(unit: str, image: OsImage | None = None) -> str:
    """The advice that starts ``unit`` at every boot."""
    if image is None or not image.image_based:
        return f"systemctl enable {unit}"
    if image.kind == "talos":
        return (
            f"Talos has no systemd: {unit.removesuffix('.service')} runs only as the service of a system extension "
            "(NVIDIA's daemons: the nvidia-container-toolkit and nvidia-fabricmanager extensions); include it in the "
            "node's image (an Image Factory schematic, then talosctl upgrade) and check it with talosctl services"
        )
    if image.kind == "bottlerocket":
        return (
            f"Bottlerocket's units are fixed by its variant and cannot be enabled: use a variant that runs "
            f"{unit.removesuffix('.service')} (the NVIDIA variants) or the setting that turns it on"
        )
    if image.kind in ("flatcar", "coreos"):
        return f"systemctl enable {unit}; for nodes provisioned again, enable it in the Butane config (systemd.units) too"
    return f"this OS is image-based ({image.how}): start {unit} from its machine configuration; systemctl enable does not persist"


__all__ = ["boot_script_persist", "module_persist", "service_persist", "sysctl_file", "sysctl_persist"]
