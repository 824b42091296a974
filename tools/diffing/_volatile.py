"""Values that change from one moment to the next on a healthy host (power, temperature, counters).

They are still compared and listed, apart: two snapshots of the same host taken a minute apart
differ in them, so they alone do not make two hosts different.
"""

from __future__ import annotations

import re

from rigaudit.tools.diffing._text import changed_lines

VOLATILE_NVML = frozenset(
    {
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetBAR1MemoryInfo",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetClock",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetFanSpeed",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetPcieThroughput",
        "nvmlDeviceGetEncoderUtilization",
        "nvmlDeviceGetDecoderUtilization",
    }
)
_VOLATILE_FILE = re.compile(
    r"^/proc/(?:meminfo|vmstat|stat|loadavg|uptime|interrupts|softirqs|zoneinfo|buddyinfo|pagetypeinfo|slabinfo"
    r"|pressure/.*|sys/kernel/random/.*|\d+/(?:stat|statm|status|io|sched|schedstat|smaps_rollup))$"
    r"|^/sys/devices/system/cpu/cpu\d+/cpufreq/(?:scaling_cur_freq|cpuinfo_cur_freq)$"
    r"|^/sys/devices/system/node/node\d+/(?:meminfo|numastat|vmstat)$"
    r"|/hwmon/hwmon\d+/.*_input$"
)
_PROCESS = re.compile(r"^/proc/(?:\d+|self|thread-self)(?:/|$)")
"""What one process shows under /proc: processes (and their numbers) differ between two hosts and two moments."""
_VOLATILE_LINE = re.compile(r"^(?:cpu MHz|bogomips)\s*:")
"""Lines of /proc/cpuinfo that move with the clock; the rest of it does not."""


def volatile_file(path: str, a: str | None = None, b: str | None = None) -> bool:
    """A file whose content moves on its own (by path, or /proc/cpuinfo where only clock lines differ)."""
    if _VOLATILE_FILE.search(path) or _PROCESS.match(path):
        return True
    if path == "/proc/cpuinfo" and a is not None and b is not None:
        removed, added = changed_lines(a, b)
        return all(_VOLATILE_LINE.match(line) for line in removed + added)
    return False


def process_path(path: str) -> bool:
    """A path under ``/proc/PID``: apart in a diff, like every volatile value."""
    return bool(_PROCESS.match(path))


def volatile_nvml(fn: str) -> bool:
    return fn in VOLATILE_NVML
