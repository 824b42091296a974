"""NVIDIA's Xid catalog: what every Xid means, the resolution NVIDIA gives, and the severity and fix kind that follow.

Source: NVIDIA's "Xid Errors" documentation, "Analyzing Xid Errors with the Xid Catalog" (docs.nvidia.com/deploy/
xid-errors), the catalog for Ampere and newer GPUs: 172 codes, each with its mnemonic, description and two resolution
buckets (the immediate action, and the investigation if it repeats). Where the catalog marks a code unused on current
GPUs, the meaning is the one NVIDIA's older Xid table gives for Volta and Turing GPUs, when it gave one. Codes 162-172
carry no bucket in the catalog yet: their resolution here follows their meaning (``_UNBUCKETED``).
"""

from __future__ import annotations

import re
from typing import Literal

from rigaudit.tools.core.record import Record
from rigaudit.tools.schema.finding import FixKind, Severity

Resolution = Literal["none", "restart_app", "reset_gpu", "reboot", "restart_vm", "check_hardware", "update_software", "report"]
"""What NVIDIA says to do first: nothing, restart the application, reset the GPU, reboot the machine, restart the
VM, check power cabling and seating, update the driver or firmware, or report to NVIDIA support."""

RESOLUTION_TEXT: dict[Resolution, str] = {
    "none": "no action (informational, or follow the Xid it accompanies)",
    "restart_app": "restart the application that hit it",
    "reset_gpu": "stop every process on the GPU and reset it (nvidia-smi -r), or reboot",
    "reboot": "reboot the machine",
    "restart_vm": "restart the VM",
    "check_hardware": "check the GPU's auxiliary power cables and seating",
    "update_software": "update the driver (and vGPU software or firmware)",
    "report": "report it to NVIDIA support with nvidia-bug-report.sh",
}
RESOLUTION_FIX_KIND: dict[Resolution, FixKind | None] = {
    "none": None,
    "restart_app": "restart",
    "reset_gpu": "reboot",
    "reboot": "reboot",
    "restart_vm": "reboot",
    "check_hardware": "hardware",
    "update_software": "reboot",
    "report": "hardware",
}
"""The fix kind of each resolution: a GPU reset stops everything on the GPU, like a reboot; a report to support ends
in hardware work (RMA) or a driver fix, neither of which a restart brings."""
RESOLUTION_RANK: dict[Resolution, int] = {
    "reboot": 0,
    "restart_vm": 1,
    "reset_gpu": 2,
    "check_hardware": 3,
    "update_software": 4,
    "report": 5,
    "restart_app": 6,
    "none": 7,
}
"""The strongest resolution first: when several Xids are logged, the strongest one's action covers the others."""
RESOLUTION_SEVERITY: dict[Resolution, Severity] = {
    "none": "low",
    "restart_app": "medium",
    "report": "medium",
    "reset_gpu": "high",
    "reboot": "high",
    "restart_vm": "high",
    "check_hardware": "high",
    "update_software": "high",
}
CRITICAL = frozenset({48, 64, 79, 95, 140, 167, 171, 172})
"""Data at risk or the GPU gone: uncorrectable memory errors that escape containment, a failed row remap, the GPU
off the bus or timing out on PCIe."""

_BUCKETS: dict[str, Resolution] = {
    "IGNORE": "none",
    "RESTART_APP": "restart_app",
    "CHECK_UVM": "restart_app",
    "RESET_GPU": "reset_gpu",
    "WORKFLOW_XID_48": "reset_gpu",
    "WORKFLOW_NVLINK_ERR": "reset_gpu",
    "WORKFLOW_NVLINK5_ERR": "reset_gpu",
    "RESTART_BM": "reboot",
    "RESTART_VM": "restart_vm",
    "CHECK_MECHANICALS": "check_hardware",
    "UPDATE_SWFW": "update_software",
    "CONTACT_SUPPORT": "report",
    "WORKFLOW_XID_45": "none",
    "XID_154": "none",
}
"""NVIDIA's immediate-action buckets -> the resolution. Xid 48's workflow resets the GPU (the row remap or page
retirement takes effect then); the NVLink workflows reset the GPU and check the links; Xid 45 follows the Xid that
caused it; Xid 154 names its recovery action in its own line (:func:`recovery_action`)."""

_UNBUCKETED: dict[int, Resolution] = {
    162: "none",
    163: "none",
    164: "report",
    165: "report",
    166: "reset_gpu",
    167: "reboot",
    168: "report",
    169: "reset_gpu",
    170: "reset_gpu",
    171: "reset_gpu",
    172: "reset_gpu",
}
"""Codes the catalog lists without a bucket yet, resolved by their meaning: power-smoothing state changes are
informational, its exhausted lifetime and reduced memory capacity are service cases, a PCIe fatal timeout loses the
GPU like Xid 79, and Xids 171/172 detail an Xid 48."""

_INVESTIGATE: dict[str, str] = {
    "": "",
    "IGNORE": "",
    "IGNORE (sympathetic)": "none if it follows another Xid (sympathetic)",
    "CONTACT_SUPPORT": "report to NVIDIA support if it repeats",
    "CHECK_APP/CUDA": "check the application and its CUDA code",
    "INVESTIGATE_SW": "investigate the driver and software stack",
    "INVESTIGATE_SW_USER": "investigate the software and what the user ran",
    "INVESTIGATE_LINK_SI": "investigate the link's signal integrity (cables, connectors)",
    "WORKFLOW_XID_13": "run DCGM diagnostics; if the hardware passes, debug the application",
    "WORKFLOW_XID_31": "debug the application's memory accesses (compute-sanitizer); run DCGM diagnostics if it repeats",
    "WORKFLOW_XID_48": "check remapped rows and retired pages (nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT); RMA on failure",
    "WORKFLOW_NVLINK5_ERR": "decode the error status per NVIDIA's NVLink5 table; report if it repeats",
    "XID_137_FLOW": "follow NVIDIA's Xid 137 flow (NVLink privilege errors)",
    "UPDATE_SWFW": "update the vGPU software",
    "N/A Informational only regarding another Xid": "none (it qualifies another Xid)",
    "SYMPATHETIC_REPORT_SOLO": "report if it appears alone; otherwise follow the other Xid",
    "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)": "alone: restart the fabric manager; else follow the other Xid",
}


class Xid(Record):
    """One Xid of NVIDIA's catalog."""

    code: int
    mnemonic: str
    meaning: str
    used: bool
    """False where the catalog marks the code unused on Ampere and newer GPUs."""
    resolution: Resolution
    investigate: str
    """What NVIDIA says to investigate if it repeats (empty: nothing more)."""

    @property
    def severity(self) -> Severity:
        return "critical" if self.code in CRITICAL else RESOLUTION_SEVERITY[self.resolution]

    @property
    def fix_kind(self) -> FixKind | None:
        return RESOLUTION_FIX_KIND[self.resolution]

    @property
    def text(self) -> str:
        """``GPU has fallen off the bus``, or the mnemonic for an unused code with no known meaning."""
        if self.meaning:
            return self.meaning if self.used else f"{self.meaning} (unused on Ampere and newer)"
        return f"{self.mnemonic} (unused on Ampere and newer)"


_TABLE: tuple[tuple[int, str, str, bool, str, str], ...] = (
    (1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "invalid or corrupted push buffer stream", False, "CONTACT_SUPPORT", ""),
    (2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "invalid or corrupted push buffer stream", False, "CONTACT_SUPPORT", ""),
    (3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "invalid or corrupted push buffer stream", False, "CONTACT_SUPPORT", ""),
    (
        4,
        "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY",
        "invalid or corrupted push buffer stream, or GPU semaphore timeout",
        False,
        "CONTACT_SUPPORT",
        "",
    ),
    (5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "", False, "CONTACT_SUPPORT", ""),
    (6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "invalid or corrupted push buffer stream", False, "CONTACT_SUPPORT", ""),
    (7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "invalid or corrupted push buffer address", False, "CONTACT_SUPPORT", ""),
    (8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "driver error programming the GPU", False, "CONTACT_SUPPORT", ""),
    (10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "", False, "CONTACT_SUPPORT", ""),
    (11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", True, "RESTART_APP", "CHECK_APP/CUDA"),
    (12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "driver error handling a GPU exception", False, "CONTACT_SUPPORT", ""),
    (
        13,
        "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
        "Graphics Engine Exception",
        True,
        "RESTART_APP",
        "WORKFLOW_XID_13",
    ),
    (14, "ROBUST_CHANNEL_FAKE_ERROR", "", False, "IGNORE", "CONTACT_SUPPORT"),
    (15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "", False, "CONTACT_SUPPORT", ""),
    (16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "display engine hung", False, "CONTACT_SUPPORT", "CONTACT_SUPPORT"),
    (17, "ROBUST_CHANNEL_PARAMETER_ERROR", "", False, "CONTACT_SUPPORT", ""),
    (18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "bus mastering disabled in PCI config space", False, "CONTACT_SUPPORT", ""),
    (19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "display engine error", False, "CONTACT_SUPPORT", ""),
    (20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "invalid or corrupted MPEG push buffer", False, "CONTACT_SUPPORT", ""),
    (21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "invalid or corrupted motion estimation push buffer", False, "CONTACT_SUPPORT", ""),
    (22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "invalid or corrupted video processor push buffer", False, "CONTACT_SUPPORT", ""),
    (23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "", False, "CONTACT_SUPPORT", ""),
    (24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "GPU semaphore timeout", False, "CONTACT_SUPPORT", ""),
    (25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", True, "RESTART_APP", "CHECK_APP/CUDA"),
    (26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "framebuffer timeout", False, "CONTACT_SUPPORT", ""),
    (27, "ROBUST_CHANNEL_VP_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (28, "ROBUST_CHANNEL_VP2_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (29, "ROBUST_CHANNEL_BSP_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "GPU semaphore access error", False, "CONTACT_SUPPORT", ""),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", True, "RESTART_APP", "WORKFLOW_XID_31"),
    (32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", True, "RESTART_APP", "CHECK_APP/CUDA"),
    (33, "ROBUST_CHANNEL_SEC_ERROR", "internal micro-controller error", False, "CONTACT_SUPPORT", ""),
    (34, "ROBUST_CHANNEL_MSVLD_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (35, "ROBUST_CHANNEL_MSPDEC_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (36, "ROBUST_CHANNEL_MSPPP_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", True, "IGNORE", "CHECK_APP/CUDA"),
    (38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", True, "IGNORE", "CONTACT_SUPPORT"),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (42, "ROBUST_CHANNEL_VIC_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", True, "IGNORE", "CONTACT_SUPPORT"),
    (
        44,
        "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW",
        "Graphics Engine fault during context switch",
        True,
        "IGNORE",
        "CONTACT_SUPPORT",
    ),
    (
        45,
        "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
        "preemptive cleanup after earlier errors (often a double-bit ECC error with several CUDA applications)",
        True,
        "WORKFLOW_XID_45",
        "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)",
    ),
    (46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (47, "ROBUST_CHANNEL_NVENC0_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", True, "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    (49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "", False, "CONTACT_SUPPORT", ""),
    (50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "", False, "CONTACT_SUPPORT", ""),
    (51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "", False, "CONTACT_SUPPORT", ""),
    (52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "", False, "CONTACT_SUPPORT", ""),
    (53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "", False, "CONTACT_SUPPORT", ""),
    (
        54,
        "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
        "Auxiliary power is not connected to the GPU board",
        True,
        "CHECK_MECHANICALS",
        "CONTACT_SUPPORT",
    ),
    (55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "", False, "CONTACT_SUPPORT", ""),
    (56, "DISPLAY_CHANNEL_EXCEPTION", "display engine error", False, "CONTACT_SUPPORT", ""),
    (57, "FB_LINK_TRAINING_FAILURE_ERROR", "error programming the video memory interface", False, "CONTACT_SUPPORT", ""),
    (58, "FB_MEMORY_ERROR", "unstable video memory interface", False, "CONTACT_SUPPORT", ""),
    (59, "PMU_ERROR", "internal micro-controller error", False, "CONTACT_SUPPORT", ""),
    (60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", True, "RESTART_APP", "INVESTIGATE_SW"),
    (61, "PMU_BREAKPOINT", "internal micro-controller breakpoint or warning", False, "CONTACT_SUPPORT", ""),
    (62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", True, "IGNORE", "IGNORE"),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (65, "ROBUST_CHANNEL_NVENC1_ERROR", "video processor exception", False, "CONTACT_SUPPORT", ""),
    (66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", True, "IGNORE", "INVESTIGATE_SW"),
    (67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", True, "IGNORE", "CONTACT_SUPPORT"),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", True, "RESTART_APP", "CHECK_APP/CUDA"),
    (70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (73, "ROBUST_CHANNEL_NVENC2_ERROR", "NVENC2 error", False, "CONTACT_SUPPORT", ""),
    (74, "NVLINK_ERROR", "NVLINK Error", True, "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"),
    (75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (78, "VGPU_START_ERROR", "vGPU Start Error", True, "UPDATE_SWFW", "UPDATE_SWFW"),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", True, "RESTART_BM", "CONTACT_SUPPORT"),
    (80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", True, "RESTART_APP", "CHECK_APP/CUDA"),
    (81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "VGA subsystem error", False, "CONTACT_SUPPORT", ""),
    (82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (87, "NVTELEMETRY_DRIVER_REPORT", "", False, "CONTACT_SUPPORT", ""),
    (88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (90, "LTC_ERROR", "", False, "CONTACT_SUPPORT", ""),
    (91, "RESERVED_XID", "", False, "CONTACT_SUPPORT", ""),
    (92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", True, "IGNORE", "CONTACT_SUPPORT"),
    (
        93,
        "INFOROM_ERASE_LIMIT_EXCEEDED",
        "Non-fatal violation of provisioned InfoROM wear limit",
        True,
        "IGNORE",
        "CONTACT_SUPPORT",
    ),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", True, "RESTART_APP", "IGNORE (sympathetic)"),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", True, "RESET_GPU", "IGNORE (sympathetic)"),
    (96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", True, "IGNORE", "IGNORE"),
    (107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", True, "IGNORE", "IGNORE"),
    (108, "NVLINK_REMOTE_TRANSLATION_ERROR", "", False, "IGNORE", "XID_137_FLOW"),
    (109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (110, "SEC_FAULT_ERROR", "Security Fault Error", True, "RESET_GPU", "INVESTIGATE_SW"),
    (111, "BUNDLE_ERROR_EVENT", "display bundle error event", False, "CONTACT_SUPPORT", ""),
    (112, "DISP_SUPERVISOR_ERROR", "display supervisor error", False, "CONTACT_SUPPORT", ""),
    (113, "DP_LT_FAILURE", "DisplayPort link training failure", False, "CONTACT_SUPPORT", ""),
    (114, "HEAD_RG_UNDERFLOW", "display pipeline underflow", False, "CONTACT_SUPPORT", ""),
    (115, "CORE_CHANNEL_REGS", "display core channel error", False, "CONTACT_SUPPORT", ""),
    (116, "WINDOW_CHANNEL_REGS", "display window channel error", False, "CONTACT_SUPPORT", ""),
    (117, "CURSOR_CHANNEL_REGS", "display cursor channel error", False, "CONTACT_SUPPORT", ""),
    (118, "HEAD_REGS", "display pixel pipeline error", False, "CONTACT_SUPPORT", ""),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", True, "RESET_GPU", "INVESTIGATE_SW"),
    (120, "GSP_ERROR", "GSP Error", True, "RESET_GPU", "INVESTIGATE_SW"),
    (121, "C2C_ERROR", "C2C Error", True, "IGNORE", "CONTACT_SUPPORT"),
    (122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC read failure", False, "CONTACT_SUPPORT", ""),
    (123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC write failure", False, "CONTACT_SUPPORT", ""),
    (124, "SPI_PMU_RPC_ERASE_FAIL", "SPI PMU RPC erase failure", False, "CONTACT_SUPPORT", ""),
    (125, "INFOROM_FS_ERROR", "InfoROM filesystem error", False, "CONTACT_SUPPORT", ""),
    (126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", True, "RESET_GPU", "INVESTIGATE_LINK_SI"),
    (137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", True, "IGNORE", "XID_137_FLOW"),
    (138, "ROBUST_CHANNEL_DLA_ERROR", "DLA error", False, "CONTACT_SUPPORT", ""),
    (139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", True, "RESTART_APP", "CONTACT_SUPPORT"),
    (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", True, "IGNORE", "CONTACT_SUPPORT"),
    (142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", True, "CONTACT_SUPPORT", ""),
    (143, "GPU_INIT_ERROR", "GPU Initialization Error", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", True, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", True, "RESTART_VM", "CONTACT_SUPPORT"),
    (152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", True, "IGNORE", "CONTACT_SUPPORT"),
    (153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", True, "IGNORE", "CONTACT_SUPPORT"),
    (
        154,
        "GPU_RECOVERY_ACTION_CHANGED",
        "GPU Recovery Action Changed",
        True,
        "XID_154",
        "N/A Informational only regarding another Xid",
    ),
    (155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", True, "RESET_GPU", "INVESTIGATE_SW_USER"),
    (156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", True, "RESET_GPU", "IGNORE"),
    (157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", True, "IGNORE", "CONTACT_SUPPORT"),
    (158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", True, "RESET_GPU", "CONTACT_SUPPORT"),
    (159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", True, "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"),
    (160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", True, "IGNORE", "INVESTIGATE_SW"),
    (161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", True, "IGNORE", "INVESTIGATE_SW"),
    (162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", True, "", ""),
    (163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", True, "", ""),
    (164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", True, "", ""),
    (165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", True, "", ""),
    (
        166,
        "NVLINK_SECURE_CRYPTO_ERR",
        "confidential-computing traffic before the NVLink was configured for encryption",
        True,
        "",
        "",
    ),
    (167, "PCIE_FATAL_TIMEOUT", "PCIe fatal timeout", True, "", ""),
    (168, "REDUCED_GPU_MEMORY_CAPACITY", "reduced GPU memory capacity: errors found in the write-protected region", True, "", ""),
    (169, "SEC2_HALT_ERROR", "Internal micro-controller halt", True, "", ""),
    (170, "NVLINK_SECURE_OTHER", "interrupt seen in confidential-computing mode", True, "", ""),
    (171, "UNCORRECTABLE_DRAM_ERROR", "uncorrectable DRAM error (details of an Xid 48)", True, "", ""),
    (172, "UNCORRECTABLE_SRAM_ERROR", "uncorrectable SRAM error (details of an Xid 48)", True, "", ""),
)
"""(code, mnemonic, meaning, used, NVIDIA's immediate bucket, NVIDIA's investigatory bucket)."""


def _entry(row: tuple[int, str, str, bool, str, str]) -> Xid:
    code, mnemonic, meaning, used, immediate, investigatory = row
    resolution = _UNBUCKETED[code] if not immediate else _BUCKETS[immediate]
    return Xid(code, mnemonic, meaning, used, resolution, _INVESTIGATE[investigatory])


CATALOG: dict[int, Xid] = {row[0]: _entry(row) for row in _TABLE}


def lookup(code: int) -> Xid | None:
    return CATALOG.get(code)


RECOVERY_ACTIONS: dict[int, tuple[str, Resolution]] = {
    0: ("None", "none"),
    1: ("GPU Reset Required", "reset_gpu"),
    2: ("Node Reboot Required", "reboot"),
    3: ("Drain P2P", "reset_gpu"),
    4: ("Drain and Reset", "reset_gpu"),
    5: ("Recover IMEX domain", "reset_gpu"),
    6: ("Bus Reset", "reset_gpu"),
    7: ("System Reboot", "reboot"),
}
"""nvmlDeviceGpuRecoveryAction_t values, as Xid 154 names the new action (``... changed from 0x0 (None) to 0x2
(Node Reboot Required)``)."""


def recovery_code(line: str) -> int | None:
    """The new recovery action an Xid 154 line names (``... to 0x1 (GPU Reset Required)`` -> 1), or None."""
    match = re.search(r"to\s+0x([0-9a-fA-F]{1,8})\b", line)
    return int(match.group(1), 16) if match else None


def recovery_resolution(code: int | None) -> Resolution | None:
    """The resolution a recovery action value asks for (None: not a value NVML defines)."""
    action = RECOVERY_ACTIONS.get(code) if code is not None else None
    return action[1] if action else None


def recovery_action(line: str) -> Resolution | None:
    """The resolution an Xid 154 line asks for (its new recovery action), or None when the line does not say."""
    return recovery_resolution(recovery_code(line))
