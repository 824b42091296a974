"""Read-only forms of hardware tools that can also change the host: smartctl, nvme, ipmitool, dcgmi, mount.

Each tool is ``deny`` in every form outside the read-only ones here (its changing subcommands and options
are many); the read-only forms are what an auditor runs: SMART data, the controller's health log, the
BMC's sensor records, DCGM's current configuration, the mount table.
"""

from __future__ import annotations

from rigaudit.tools.policy.schema import Form, Rule

_DISK = r"/dev/(sd[a-z]+|nvme[0-9]+(n[0-9]+)?|hd[a-z]+|vd[a-z]+)"
_SMART_READS = (r"-a", r"-i", r"-H", r"-x", r"-A", r"--all", r"--info", r"--health", r"--xall", r"--attributes")
_NVME_READS = ("smart-log", "list", "id-ctrl", "id-ns", "error-log", "list-subsys", "version")

HARDWARE: tuple[Rule, ...] = (
    Rule(
        "smartctl-read",
        "allow",
        "prints a disk's SMART identity, health and attributes",
        examples=("smartctl -a /dev/nvme0", "smartctl -H /dev/sda", "smartctl -i -A /dev/nvme0n1"),
        programs=("smartctl",),
        form=Form(flags=_SMART_READS, operands="match", operand_re=_DISK, min_operands=1, max_operands=1),
    ),
    Rule(
        "smartctl-change",
        "deny",
        "drives a disk (self-tests, settings, power states)",
        examples=("smartctl -t long /dev/sda", "smartctl -s off /dev/sda"),
        programs=("smartctl",),
        unless_only=(*_SMART_READS, _DISK),
    ),
    Rule(
        "nvme-read",
        "allow",
        "prints an NVMe controller's health log, identity or error log",
        examples=("nvme smart-log /dev/nvme0", "nvme list", "nvme id-ctrl /dev/nvme0"),
        programs=("nvme",),
        first=_NVME_READS,
        form=Form(flags=(r"-H|--human-readable",), operands="match", operand_re=_DISK, max_operands=1),
    ),
    Rule(
        "nvme-change",
        "deny",
        "drives NVMe devices (format, sanitize, firmware, features)",
        examples=("nvme format /dev/nvme0n1", "nvme set-feature /dev/nvme0 -f 2 -v 0"),
        programs=("nvme",),
        unless_first=_NVME_READS,
    ),
    Rule(
        "ipmitool-sensors",
        "allow",
        "prints the BMC's sensor data records",
        examples=("ipmitool sdr", "ipmitool sdr list", "ipmitool sensor"),
        programs=("ipmitool",),
        first=("sdr", "sensor"),
        form=Form(operands="match", operand_re=r"list|elist|full|compact|event|mcloc", max_operands=1),
    ),
    Rule(
        "dcgmi-config-get",
        "allow",
        "prints DCGM's current GPU configuration",
        examples=("dcgmi config --get", "dcgmi config --get -g 0", "dcgmi config --get -v"),
        programs=("dcgmi",),
        first=("config",),
        form=Form(flags=(r"--get", r"-v|--verbose", r"-j|--json"), valued={"-g": r"[0-9]+", "--group": r"[0-9]+"}),
    ),
    Rule(
        "mount-table",
        "allow",
        "prints the mount table (mount with no arguments)",
        examples=("mount",),
        programs=("mount",),
        form=Form(),
    ),
    Rule(
        "mount-change",
        "deny",
        "mounts or remounts storage",
        examples=("mount /dev/sda1 /mnt", "mount -o remount,rw /"),
        programs=("mount",),
        any_arg=(r".*",),
    ),
)
