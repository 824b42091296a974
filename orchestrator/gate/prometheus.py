"""``--prometheus FILE``: the check's result in the node_exporter textfile format, written atomically.

node_exporter's textfile collector reads ``*.prom`` files of a directory at every scrape; the file is
written beside itself under a hidden temporary name and renamed over, so a scrape sees the last
result or the new one, never half of one. Every series is stable: a verdict is a value, never a label, so a
check's series lives across its changes (``rate()``, ``changes()`` and alert history hold). Metrics (gauges;
``Hostname`` as dcgm-exporter names the node):

- ``rigaudit_check_status{check, area, Hostname}``: one per selected check, its status as a number
  (:data:`STATUS_VALUES`); ``rigaudit_check_severity{...}``: its problem's severity (:data:`SEVERITY_VALUES`,
  0 when no problem); ``rigaudit_check_decided{...}``: 1 when it decided the verdict;
- ``rigaudit_gpu_info{gpu, UUID, pci_bus_id, model_name, Hostname}`` 1 per GPU, and per GPU
  ``rigaudit_gpu_problems`` (problems naming it) and ``rigaudit_gpu_severity`` (the worst): dcgm-exporter's
  labels, so ``DCGM_FI_DEV_GPU_TEMP * on(Hostname, gpu) group_left rigaudit_gpu_severity`` joins;
- ``rigaudit_checks{status, Hostname}``: the checks of each status;
- ``rigaudit_check_verdict{Hostname}``: the verdict as a number (:data:`VERDICT_VALUES`),
  ``rigaudit_check_exit_status``: the exit status;
- ``rigaudit_check_duration_seconds``, ``rigaudit_check_timestamp_seconds`` (Unix time it ended) and
  ``rigaudit_check_last_success_timestamp_seconds``: when a check last reached a verdict (healthy or problem;
  kept from the previous file while the gate could not check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.schema.check import GATE_STATUSES, CheckResult, GateCheck, GateGpu

PREFIX = "rigaudit_check"
STATUS_VALUES = {"ok": 0, "problem": 1, "unknown": 2, "not_applicable": 3, "not_checked": 4}
SEVERITY_VALUES = {"low": 1, "medium": 2, "high": 3, "critical": 4}
VERDICT_VALUES = {"healthy": 0, "problem": 1, "could_not_check": 3}
"""The exit statuses' numbers."""
LAST_SUCCESS = f"{PREFIX}_last_success_timestamp_seconds"
TEXTFILE_MODE = 0o644
"""node_exporter usually runs as its own user: the file must be readable by others."""
MAX_PREVIOUS_BYTES = 4 * 1024 * 1024
_GPU_SUBJECT = r"^GPU(\d+) \(|\(?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\)?$"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) and not value.is_integer() else str(int(value))


def _family(name: str, help_text: str, samples: Iterable[tuple[str, float]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)
    return lines


def _legend(values: dict[str, int]) -> str:
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in values.items())


def nvml_bus_id(bdf: str) -> str:
    """``0000:3b:00.0`` -> ``00000000:3B:00.0``, NVML's bus id as dcgm-exporter's ``pci_bus_id`` shows it."""
    domain, _, rest = bdf.partition(":")
    try:
        return f"{int(domain, 16):08X}:{rest.upper()}"
    except ValueError:
        return bdf


def _gpu_problems(result: CheckResult) -> dict[str, list[int]]:
    """PCI address -> the severities of the problems whose subjects name that GPU (by index or address)."""
    by_index = {str(g.gpu): g.pci_bus_id for g in result.gpus if g.gpu is not None}
    found: dict[str, list[int]] = {g.pci_bus_id: [] for g in result.gpus}
    for finding in result.audit.findings:
        if finding.status != "problem":
            continue
        named: set[str] = set()
        for subject in finding.subjects:
            for match in re.finditer(_GPU_SUBJECT, subject):
                bdf = by_index.get(match.group(1) or "") or match.group(2)
                if bdf in found:
                    named.add(bdf)
        for bdf in named:
            found[bdf].append(SEVERITY_VALUES.get(finding.severity or "", 0))
    return found


def _gpu_families(result: CheckResult, host: tuple[str, str]) -> list[str]:
    def labels(g: GateGpu, *more: tuple[str, str]) -> str:
        index = "" if g.gpu is None else str(g.gpu)
        return _labels((("gpu", index), ("UUID", g.uuid), ("pci_bus_id", nvml_bus_id(g.pci_bus_id)), *more, host))

    problems = _gpu_problems(result)
    return [
        *_family(
            "rigaudit_gpu_info",
            "1 for each GPU the last rigaudit check saw (gpu empty: on the PCI bus, not on NVML); dcgm-exporter's labels.",
            ((labels(g, ("model_name", g.name)), 1.0) for g in result.gpus),
        ),
        *_family(
            "rigaudit_gpu_problems",
            "Problems of the last rigaudit check that name this GPU.",
            ((labels(g), float(len(problems[g.pci_bus_id]))) for g in result.gpus),
        ),
        *_family(
            "rigaudit_gpu_severity",
            f"The worst severity of the problems naming this GPU: 0 none, {_legend(SEVERITY_VALUES)}.",
            ((labels(g), float(max(problems[g.pci_bus_id], default=0))) for g in result.gpus),
        ),
    ]


def render(result: CheckResult, last_success: float | None = None) -> str:
    """The textfile's text (see the module docstring); ``last_success``: the previous file's, kept while the gate
    could not check."""
    host = ("Hostname", result.host)

    def check_labels(c: GateCheck) -> str:
        return _labels((("check", c.check), ("area", c.area), host))

    if result.verdict != "could_not_check":
        last_success = result.finished_at
    lines = [
        *_family(
            f"{PREFIX}_status",
            f"Each check's status in the last rigaudit check: {_legend(STATUS_VALUES)}.",
            ((check_labels(c), float(STATUS_VALUES[c.status])) for c in result.checks),
        ),
        *_family(
            f"{PREFIX}_severity",
            f"Each check's problem severity in the last rigaudit check: 0 no problem, {_legend(SEVERITY_VALUES)}.",
            ((check_labels(c), float(SEVERITY_VALUES.get(c.severity or "", 0))) for c in result.checks),
        ),
        *_family(
            f"{PREFIX}_decided",
            f"1 when the check decided the verdict (a problem at or above {result.fail_on}, or not checked), else 0.",
            ((check_labels(c), 1.0 if c.counts else 0.0) for c in result.checks),
        ),
        *_gpu_families(result, host),
        *_family(
            "rigaudit_checks",
            "Checks of each status in the last rigaudit check.",
            ((_labels((("status", s), host)), float(result.counted(s))) for s in GATE_STATUSES),
        ),
        *_family(
            f"{PREFIX}_verdict",
            f"The verdict of the last rigaudit check: {_legend(VERDICT_VALUES)} (problems at or above {result.fail_on}).",
            ((_labels((host,)), float(VERDICT_VALUES[result.verdict])),),
        ),
        *_family(
            f"{PREFIX}_exit_status",
            "Exit status: 0 healthy, 1 problem, 3 could not check.",
            ((_labels((host,)), float(result.exit_code)),),
        ),
        *_family(
            f"{PREFIX}_duration_seconds", "How long the last rigaudit check took.", ((_labels((host,)), result.duration_s),)
        ),
        *_family(
            f"{PREFIX}_timestamp_seconds",
            "When the last rigaudit check ended, in Unix time.",
            ((_labels((host,)), result.finished_at),),
        ),
    ]
    if last_success is not None:
        lines += _family(
            LAST_SUCCESS,
            "When a rigaudit check last reached a verdict (healthy or problem), in Unix time.",
            ((_labels((host,)), last_success),),
        )
    return "\n".join(lines) + "\n"


def previous_success(path: Path) -> float | None:
    """The last-success timestamp of the textfile already at ``path`` (a regular file), if any."""
    from rigaudit.tools.files.bounded import InputError, read_regular

    try:
        text = read_regular(path, limit=MAX_PREVIOUS_BYTES, follow=False).decode("utf-8", "replace")
    except (InputError, OSError):
        return None
    for line in text.splitlines():
        if line.startswith(LAST_SUCCESS):
            try:
                return float(line.rsplit(" ", 1)[1])
            except ValueError:
                return None
    return None


def write_textfile(path: Path, result: CheckResult) -> None:
    """Write :func:`render` of ``result`` to ``path`` atomically, readable by node_exporter: whatever is there (a
    link, a FIFO) is replaced by the file, never written through."""
    atomic_write_text(path, render(result, previous_success(path)), mode=TEXTFILE_MODE, through=False)


__all__ = ["render", "write_textfile"]
