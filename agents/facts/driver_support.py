"""Which driver each NVIDIA GPU architecture needs: the first branch that supports it, and which kernel module flavour."""

from __future__ import annotations

ARCH_NAMES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
}
MIN_BRANCH = {7: 450, 8: 525, 9: 525, 10: 570}
"""The first driver branch that supports each NVML architecture (nvmlDeviceGetArchitecture)."""
OPEN_MIN_ARCH = 6
"""The open kernel module drives Turing and newer only."""
BLACKWELL = 10
OPEN_REQUIRED = "requires use of the NVIDIA open kernel modules"
"""The driver's kernel-log line when the proprietary module meets a GPU only the open modules drive."""
