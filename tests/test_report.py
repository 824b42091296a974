"""system-improve.md reads like the document a senior engineer writes before touching a host."""

from __future__ import annotations

from pathlib import Path

from rigaudit.orchestrator.plan.planner import build_plan
from rigaudit.orchestrator.report.document import PLACEHOLDER, append_section, render_report, write_report
from rigaudit.tools.schema.audit import AuditResult, HostSummary
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, SysctlAction


def _result() -> AuditResult:
    findings = [
        Finding(
            check="numa.balancing",
            area="numa",
            status="problem",
            severity="medium",
            title="NUMA balancing on",
            observed="kernel.numa_balancing=1",
            expected="0",
            fix=Fix(
                kind="runtime",
                where="host",
                summary="turn NUMA balancing off",
                verify="cat /proc/sys/kernel/numa_balancing",
                revert="sysctl -w kernel.numa_balancing=1",
                actions=(SysctlAction(key="kernel.numa_balancing", value="0"),),
            ),
        ),
        Finding(
            check="power.scaling_driver",
            area="power",
            status="problem",
            severity="medium",
            title="acpi-cpufreq",
            observed="acpi-cpufreq",
            fix=Fix(
                kind="reboot",
                where="host",
                summary="amd_pstate=active",
                actions=(CommandAction(description="add amd_pstate=active to the kernel command line"),),
            ),
        ),
        Finding(check="pcie.link", area="pcie", status="ok", title="links at max", observed="8/8 at 32 GT/s x16"),
        Finding(check="runtime.env", area="runtime", status="unknown", title="server env", observed="no server process found"),
    ]
    plan, _ = build_plan(findings)
    return AuditResult(
        host=HostSummary(name="pve", source="snapshot:x", facts={"kernel": "6.8"}),
        started_at="2026-11-29T00:00:00Z",
        duration_s=0.5,
        findings=tuple(findings),
        plan=plan,
    )


def test_report_has_baseline_findings_plan_and_later_sections() -> None:
    text = render_report(_result())
    order = [
        "## Baseline state",
        "### Problems",
        "## Plan",
        "### Steps, in order",
        "## Other findings",
        "### Unknown",
        "### Confirmed ok",
        "## Applied changes",
        "## Validation",
        "## Benchmark comparison",
    ]
    positions = [text.index(h) for h in order]
    assert positions == sorted(positions)
    steps = text[text.index("### Steps, in order") : text.index("## Other findings")]
    assert steps.index("sysctl -w kernel.numa_balancing=0") < steps.index("amd_pstate=active")
    assert "`numa.balancing`; runtime, on this host" in steps and "`power.scaling_driver`; reboot, on this host" in steps
    assert "1 runtime step(s) take effect now" in steps
    assert "no server process found" in text


def test_append_section_replaces_placeholder_then_appends(tmp_path: Path) -> None:
    path = tmp_path / "system-improve.md"
    write_report(path, _result())
    append_section(path, "Applied changes", "- numa: 1 -> 0 (verified)")
    append_section(path, "Applied changes", "- rolled back")
    text = path.read_text()
    section = text[text.index("## Applied changes") : text.index("## Validation")]
    assert PLACEHOLDER not in section
    assert section.index("1 -> 0") < section.index("rolled back")
    assert PLACEHOLDER in text[text.index("## Validation") :]
    append_section(tmp_path / "new.md", "Benchmark comparison", "x")
    fresh = (tmp_path / "new.md").read_text()
    assert fresh.startswith("# System improvement plan\n")  # a report a bench started is still a rigaudit report
    assert "<!-- rigaudit report:" in fresh and fresh.rstrip().endswith("## Benchmark comparison\n\nx")


def test_writing_to_a_device_never_replaces_it() -> None:
    import stat

    from rigaudit.tools.files.atomic import atomic_write_text

    atomic_write_text(Path("/dev/null"), "discarded\n")
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)


def test_report_says_what_fixing_can_buy() -> None:
    result = _result()
    assert "2 step(s) together" in render_report(result) and "% of throughput" in render_report(result)
    serious = result.findings[0].model_copy(update={"severity": "critical"})
    worse = result.model_copy(update={"findings": (serious, *result.findings[1:])})
    assert "`numa.balancing` can cost large factors" in render_report(worse)
