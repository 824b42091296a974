"""Read-only forms of hardware tools that can also change the host: smartctl, nvme, ipmitool, dcgmi, mount.

Each tool is ``deny`` in every form outside the read-only ones here (its changing subcommands and options
are many); the read-only forms are what an auditor runs: SMART data, the controller's health log, the
BMC's sensor records, DCGM's current configuration, the mount table.
"""

from __future__ import annotations

from rigaudit.tools.policy.schema import Form, Rule

_DISK = r"/dev/(sd[a-z]+|nvme[0-9]+(n[0-9]+)?|hd[a-z]+|vd[a-z]+)"
_SMART_READS = (r"-a", r"-i", r"-H", r"-x", r"-A", r"--all", r"--info", r"--health", r"--xall", r"--attributes")
_DEVICE_TYPE = r"[a-z0-9]+(,[a-z0-9]+)*"
"""smartctl's device type (``-d nvme``, ``-d sat,12``, ``-d megaraid,0``)."""
_SMART_FLAGS = (*_SMART_READS, r"-j", r"--json(=[cgiosuvy]+)?", r"--device=" + _DEVICE_TYPE)
_NVME_READS = ("smart-log", "list", "id-ctrl", "id-ns", "error-log", "list-subsys", "version")
_MOUNT_TYPES = r"(no)?[a-z0-9.]+(,(no)?[a-z0-9.]+)*"
_NVME_OUTPUT = r"normal|json|binary"
_SENSOR_TYPE = r"[A-Z][A-Za-z ]*|[0-9]+(\.[0-9]+)?|0x[0-9a-fA-F]+"
"""An SDR record type (``Temperature``, ``Power Supply``) or entity id (``3.1``): never a lower-case subcommand."""

HARDWARE: tuple[Rule, ...] = (
    Rule(
        "smartctl-read",
        "allow",
        "prints a disk's SMART identity, health and attributes",
        examples=("smartctl -a /dev/nvme0", "smartctl -H /dev/sda", "smartctl -a -d nvme /dev/nvme0", "smartctl -j -x /dev/sda"),
        programs=("smartctl",),
        form=Form(
            flags=_SMART_FLAGS,
            valued={"-d": _DEVICE_TYPE},
            operands="match",
            operand_re=_DISK,
            min_operands=1,
            max_operands=1,
        ),
    ),
    Rule(
        "smartctl-scan",
        "allow",
        "lists the disks smartctl can query",
        examples=("smartctl --scan", "smartctl --scan-open", "smartctl --scan -d nvme"),
        programs=("smartctl",),
        form=Form(flags=(r"--scan", r"--scan-open", r"-j"), valued={"-d": _DEVICE_TYPE}, required=("--scan", "--scan-open")),
    ),
    Rule(
        "smartctl-change",
        "deny",
        "drives a disk (self-tests, settings, power states)",
        examples=("smartctl -t long /dev/sda", "smartctl -s off /dev/sda"),
        programs=("smartctl",),
        unless_only=(*_SMART_FLAGS, r"-d", _DEVICE_TYPE, _DISK, r"--scan", r"--scan-open"),
    ),
    Rule(
        "nvme-read",
        "allow",
        "prints an NVMe controller's health log, identity or error log",
        examples=("nvme smart-log /dev/nvme0", "nvme list", "nvme id-ctrl /dev/nvme0", "nvme smart-log /dev/nvme0 -o json"),
        programs=("nvme",),
        first=_NVME_READS,
        form=Form(
            flags=(r"-H|--human-readable", r"--output-format=(" + _NVME_OUTPUT + ")"),
            valued={"-o": _NVME_OUTPUT, "--output-format": _NVME_OUTPUT},
            operands="match",
            operand_re=_DISK,
            max_operands=1,
        ),
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
        examples=("ipmitool sdr", "ipmitool sdr list", "ipmitool sdr elist all", "ipmitool sdr type Temperature"),
        programs=("ipmitool",),
        first=("sdr",),
        form=Form(
            operands="match",
            operand_re=r"list|elist|full|compact|event|mcloc|generic|fru|all|info|type|entity|" + _SENSOR_TYPE,
            max_operands=3,
        ),
    ),
    Rule(
        "ipmitool-sensor-read",
        "allow",
        "prints the BMC's sensor readings and thresholds",
        examples=("ipmitool sensor", "ipmitool sensor list", "ipmitool sensor get 'CPU Temp'"),
        programs=("ipmitool",),
        first=("sensor",),
        form=Form(operands="match", operand_re=r"list|get|[A-Z0-9][A-Za-z0-9_. +-]*", max_operands=4),
    ),
    Rule(
        "ipmitool-inventory",
        "allow",
        "prints the BMC's FRU inventory, event log, chassis status or controller identity",
        examples=("ipmitool fru", "ipmitool fru print 0", "ipmitool sel list", "ipmitool chassis status", "ipmitool mc info"),
        programs=("ipmitool",),
        first=("fru", "sel", "chassis", "mc"),
        form=Form(operands="match", operand_re=r"print|list|elist|info|status|guid|[0-9]+", max_operands=2),
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
        "prints the mount table (mount with no operands; -l adds labels, -t keeps some types)",
        examples=("mount", "mount -l", "mount -t nfs4", "mount -l -t ext4,xfs"),
        programs=("mount",),
        form=Form(flags=(r"-l", r"--show-labels"), valued={"-t": _MOUNT_TYPES, "--types": _MOUNT_TYPES}),
    ),
    Rule(
        "mount-change",
        "deny",
        "mounts or remounts storage",
        examples=("mount /dev/sda1 /mnt", "mount -o remount,rw /", "mount -t ext4 /dev/sda1 /mnt"),
        programs=("mount",),
        any_arg=(r".*",),
        unless_only=(r"-l", r"--show-labels", r"-t", r"--types", _MOUNT_TYPES),
    ),
)
