"""``--prometheus FILE``: the check's result in the node_exporter textfile format, written atomically.

node_exporter's textfile collector reads ``*.prom`` files of a directory at every scrape; the file is
written beside itself under a hidden temporary name and renamed over, so a scrape sees the last
result or the new one, never half of one. Metrics (all gauges):

- ``rigaudit_check_problem{check, area, status, severity}``: one per selected check, 1 when it is a
  problem, else 0 (status ``ok``, ``problem``, ``unknown``, ``not_applicable`` or ``not_checked``);
- ``rigaudit_checks{status}``: the checks of each status;
- ``rigaudit_check_verdict{verdict}``: 1 for the verdict reached (``healthy``, ``problem``,
  ``could_not_check``), 0 for the others; ``rigaudit_check_exit_status``: the exit status;
- ``rigaudit_check_duration_seconds`` and ``rigaudit_check_timestamp_seconds`` (Unix time it ended).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.model.check import GATE_STATUSES, CheckResult

PREFIX = "rigaudit_check"
VERDICTS = ("healthy", "problem", "could_not_check")
TEXTFILE_MODE = 0o644
"""node_exporter usually runs as its own user: the file must be readable by others."""


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


def render(result: CheckResult) -> str:
    """The textfile's text (see the module docstring)."""
    checks = [
        (
            _labels((("check", c.check), ("area", c.area), ("status", c.status), ("severity", c.severity or ""))),
            1.0 if c.status == "problem" else 0.0,
        )
        for c in result.checks
    ]
    lines = [
        *_family(f"{PREFIX}_problem", "1 when the check found a problem, else 0 (status and severity as labels).", checks),
        *_family(
            "rigaudit_checks",
            "Checks of each status in the last rigaudit check.",
            ((_labels((("status", s),)), float(result.counted(s))) for s in GATE_STATUSES),
        ),
        *_family(
            f"{PREFIX}_verdict",
            f"1 for the verdict of the last rigaudit check (problems at or above {result.fail_on} fail it).",
            ((_labels((("verdict", v),)), 1.0 if v == result.verdict else 0.0) for v in VERDICTS),
        ),
        *_family(
            f"{PREFIX}_exit_status",
            "Exit status: 0 healthy, 1 problem, 3 could not check.",
            (("", float(result.exit_code)),),
        ),
        *_family(f"{PREFIX}_duration_seconds", "How long the last rigaudit check took.", (("", result.duration_s),)),
        *_family(f"{PREFIX}_timestamp_seconds", "When the last rigaudit check ended, in Unix time.", (("", result.finished_at),)),
    ]
    return "\n".join(lines) + "\n"


def write_textfile(path: Path, result: CheckResult) -> None:
    """Write :func:`render` of ``result`` to ``path`` atomically, readable by node_exporter: whatever is there (a
    link, a FIFO) is replaced by the file, never written through."""
    atomic_write_text(path, render(result), mode=TEXTFILE_MODE, through=False)


__all__ = ["render", "write_textfile"]
