"""An NVIDIA vGPU as the guest sees it: NVML's answers for a C-series vGPU, its licence, nvidia-gridd.

What a vGPU guest shows (NVIDIA Virtual GPU Software Management SDK User Guide, "Managing vGPUs from a guest VM":
vGPUs are presented like pass-through GPUs, ``nvmlDeviceGetVirtualizationMode`` says VGPU, and properties that do
not apply to a vGPU are reported as such; NVIDIA AI Enterprise "vGPU for Compute Licensing": the guest's
``nvidia-smi -q`` carries a "vGPU Software Licensed Product" section, an unlicensed vGPU for Compute degrades to an
idle level of compute after a 20-minute grace period; "Peer-To-Peer CUDA Transfers": no P2P over PCIe between vGPUs).
The physical GPU's sensors, power, PCIe link, MIG and NVLink belong to the hypervisor: NVML answers NOT_SUPPORTED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.catalog import GpuModel

if TYPE_CHECKING:
    from tests.hostgen.build import Built
    from tests.hostgen.nvidia import GpuState

BRAND_VCS = 9
"""NVML_BRAND_NVIDIA_VCS: NVIDIA Virtual Compute Server."""
VIRTUALIZATION_VGPU = 2
FEATURE_COMPUTE = 4
"""NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE."""
PRODUCT = "NVIDIA Virtual Compute Server"
EXPIRY = (2027, 3, 31, 23, 59, 59)

REFUSED_PER_GPU = (
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetPcieLinkMaxSpeed",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetRowRemapperHistogram",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetSupportedClocksEventReasons",
    "nvmlDeviceGetInforomImageVersion",
)


def name(model: GpuModel, profile: str) -> str:
    """``NVIDIA H100 PCIe`` with profile ``80C`` -> ``NVIDIA H100-80C`` (how NVML names a vGPU in the guest)."""
    board = model.name.removeprefix("NVIDIA ").split()[0]
    return f"NVIDIA {board}-{profile}"


def licensed(built: Built) -> bool:
    return built.spec.driver.vgpu_license == "licensed"


def write_nvml(built: Built, g: GpuState, profile: str) -> None:
    """Override a GPU's NVML records with what a vGPU guest reads."""
    tree, i = built.tree, g.index
    tree.call("nvmlDeviceGetName", (i,), name(g.model, profile))
    tree.call("nvmlDeviceGetBrand", (i,), BRAND_VCS)
    tree.call("nvmlDeviceGetVirtualizationMode", (i,), VIRTUALIZATION_VGPU)
    for fn in REFUSED_PER_GPU:
        tree.call(fn, (i,), error="NOT_SUPPORTED")
    for sensor in (0, 1, 2, 3):
        tree.call("nvmlDeviceGetTemperatureThreshold", (i, sensor), error="NOT_SUPPORTED")
    tree.call("nvmlDeviceGetTemperature", (i, 0), error="NOT_SUPPORTED")
    for clock in (0, 2):
        tree.call("nvmlDeviceGetApplicationsClock", (i, clock), error="NOT_SUPPORTED")
        tree.call("nvmlDeviceGetDefaultApplicationsClock", (i, clock), error="NOT_SUPPORTED")
    for cause in (0, 1):
        tree.call("nvmlDeviceGetRetiredPages", (i, cause), error="NOT_SUPPORTED")
    year, month, day, hour, minute, second = EXPIRY
    ok = licensed(built)
    tree.call(
        "nvmlDeviceGetGridLicensableFeatures_v4",
        (i,),
        {
            "isGridLicenseSupported": 1,
            "licensableFeaturesCount": 1,
            "gridLicensableFeatures": [
                {
                    "featureCode": FEATURE_COMPUTE,
                    "featureState": 1 if ok else 0,
                    "licenseInfo": PRODUCT if ok else "",
                    "productName": PRODUCT,
                    "featureEnabled": 1,
                    "licenseExpiry": {
                        "year": year if ok else 0,
                        "month": month if ok else 0,
                        "day": day if ok else 0,
                        "hour": hour if ok else 0,
                        "min": minute if ok else 0,
                        "sec": second if ok else 0,
                        "status": 2 if ok else 0,
                    },
                }
            ],
        },
    )


def smi_section(built: Built) -> list[str]:
    """The "vGPU Software Licensed Product" section of the guest's ``nvidia-smi -q``."""
    year, month, day, hour, minute, second = EXPIRY
    status = (
        f"Licensed (Expiry: {year}-{month}-{day} {hour}:{minute}:{second} GMT)" if licensed(built) else "Unlicensed (Restricted)"
    )
    return [
        "    vGPU Software Licensed Product",
        f"        Product Name                      : {PRODUCT}",
        f"        License Status                    : {status}",
    ]


def gridd(built: Built) -> None:
    """nvidia-gridd (the licensing client), its configuration and what it logged."""
    tree = built.tree
    tree.command(("systemctl", "is-active", "nvidia-gridd"), "active\n")
    tree.file(
        "/etc/nvidia/gridd.conf",
        "# /etc/nvidia/gridd.conf - Configuration file for NVIDIA Grid Daemon\n"
        "# Description: Set Feature to be enabled\n# Data type: integer\n"
        "# Possible values:\n#    0 => for unlicensed state\n#    1 => for NVIDIA vGPU\n"
        "FeatureType=1\n",
    )
    if licensed(built):
        tree.file("/etc/nvidia/ClientConfigToken/client_configuration_token_11-15-2026-09-12-44.tok", "<token>\n")
        lines = [
            "nvidia-gridd[1843]: Started (1843)",
            "nvidia-gridd[1843]: vGPU Software package (0)",
            "nvidia-gridd[1843]: Ignore service provider and node-locked licensing",
            "nvidia-gridd[1843]: NLS initialized",
            "nvidia-gridd[1843]: Acquiring license. (Info: dls.example.internal; NVIDIA Virtual Compute Server)",
            f"nvidia-gridd[1843]: License acquired successfully. (Info: dls.example.internal, {PRODUCT}; "
            "Expiry: 2027-3-31 23:59:59 GMT)",
        ]
    else:
        lines = [
            "nvidia-gridd[1843]: Started (1843)",
            "nvidia-gridd[1843]: vGPU Software package (0)",
            "nvidia-gridd[1843]: Failed to read client configuration token",
            "nvidia-gridd[1843]: Failed to acquire license from license server",
            "nvidia-gridd[1843]: Licensing grace period for NVIDIA Virtual Compute Server expired",
        ]
    tree.command(("journalctl", "-u", "nvidia-gridd", "--no-pager", "-n", "50"), "\n".join(lines) + "\n")
