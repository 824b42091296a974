"""Text from a host never becomes shell: names are validated when an Action is built and quoted when rendered."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from pydantic import ValidationError

from rigaudit.orchestrator.cli import main
from rigaudit.tools.actions.persist import persist_lines
from rigaudit.tools.actions.script import ScriptStep, before_checks, render_script
from rigaudit.tools.actions.targets import ModuleTarget, PciRegisterTarget, ValueFileTarget
from rigaudit.tools.actions.text import describe, shell_lines
from rigaudit.tools.schema import names
from rigaudit.tools.schema.finding import (
    CommandAction,
    ModuleLoadAction,
    PciRegisterAction,
    ServiceStartAction,
    SysctlAction,
    SysfsWriteAction,
)
from rigaudit.tools.schema.plan import PlanStep
from tests.conftest import SEED
from tests.support.mutate import light_copy, set_file, set_link, set_nvml

EVIL = ["$(reboot)", "`id`", "a;rm -rf /", "a b", "a\nb", "x'y", "-r", "--all", "\x00", "", "a|b", "a>b"]


@pytest.mark.parametrize("check", [names.bdf, names.sysctl_key, names.module_name, names.unit_name, names.sysfs_path])
@pytest.mark.parametrize("text", EVIL)
def test_shell_text_is_never_a_name(check: object, text: str) -> None:
    with pytest.raises(ValueError):
        check(text)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("check", "text"),
    [
        (names.bdf, "0000:41:00.0"),
        (names.bdf, "00000000:c1:00.7"),
        (names.sysctl_key, "kernel.numa_balancing"),
        (names.sysctl_key, "net.ipv4.conf.eth0.rp_filter"),
        (names.module_name, "nvidia-peermem"),
        (names.unit_name, "nvidia-fabricmanager.service"),
        (names.unit_name, "getty@tty1.service"),
        (names.sysfs_path, "/sys/devices/system/cpu/cpu17/cpuidle/state2/disable"),
        (names.sysfs_path, "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
    ],
)
def test_real_names_pass(check: object, text: str) -> None:
    assert check(text) == text  # type: ignore[operator]


@pytest.mark.parametrize("path", ["/sys/../etc/shadow", "/sys/./x", "/etc/passwd", "/sys/a b", "/sys/x$(id)", "/sysfoo"])
def test_a_sysfs_path_is_plain_and_under_sys(path: str) -> None:
    with pytest.raises(ValueError):
        names.sysfs_path(path)


@pytest.mark.parametrize(
    "build",
    [
        lambda bad: PciRegisterAction(devices=(bad,), capability="exp", offset=8, width=2, value=0x5000, mask=0x7000),
        lambda bad: SysctlAction(key=bad, value="0"),
        lambda bad: SysctlAction(key="vm.swappiness", value=f"1\n{bad}"),
        lambda bad: SysfsWriteAction(paths=(f"/sys/{bad}",), value="1"),
        lambda bad: ModuleLoadAction(module=bad),
        lambda bad: ServiceStartAction(unit=bad),
        lambda bad: PciRegisterTarget(device=bad, capability="exp", offset=8, width=2, value=0, mask=0x7000),
        lambda bad: ValueFileTarget(path=f"/proc/sys/{bad}", value="0"),
        lambda bad: ModuleTarget(module=bad),
    ],
)
def test_actions_and_targets_refuse_shell_text(build: object) -> None:
    with pytest.raises(ValidationError):
        build("$(touch /tmp/pwned)")  # type: ignore[operator]


def test_pci_values_fit_their_width() -> None:
    with pytest.raises(ValidationError):
        PciRegisterAction(devices=("0000:41:00.0",), capability="exp", offset=8, width=2, value=0x10000, mask=0x7000)
    with pytest.raises(ValidationError):
        PciRegisterAction(devices=("0000:41:00.0",), capability="exp; reboot", offset=8, width=2, value=0, mask=1)


def test_rendering_rechecks_an_action_built_without_validation() -> None:
    bad = PciRegisterAction.model_construct(
        type="pci_register", devices=("0000:41:00.0$(reboot)",), capability="exp", offset=8, width=2, value=0x5000, mask=0x7000
    )
    lines = shell_lines(bad)
    assert lines == [lines[0]] and lines[0].startswith("# not shown:") and "\n" not in lines[0]
    assert all(line.startswith("not shown") for line in before_checks(bad))
    assert persist_lines([bad]) == {}
    sysctl = SysctlAction.model_construct(type="sysctl", key="vm.swappiness", value="1\nreboot")
    assert shell_lines(sysctl)[0].startswith("# not shown:")


def test_values_are_quoted_and_one_word() -> None:
    (line,) = shell_lines(SysctlAction(key="vm.swappiness", value="10 20"))
    assert shlex.split(line) == ["sysctl", "-w", "vm.swappiness=10 20"]
    (line,) = shell_lines(SysfsWriteAction(paths=("/sys/kernel/mm/transparent_hugepage/defrag",), value="madvise"))
    assert shlex.split(line) == ["echo", "madvise", ">", "/sys/kernel/mm/transparent_hugepage/defrag"]


def test_free_text_stays_inside_a_comment() -> None:
    action = CommandAction(description="reboot later\nreboot\r\n$(id)")
    assert [line.startswith("#") for line in shell_lines(action)] == [True]
    assert "\n" not in describe(action)
    step = PlanStep(
        id="x\nreboot",
        check="c",
        priority="P1",
        kind="reboot",
        where="hypervisor",
        title="t\nrm -rf /",
        actions=(action,),
        verify="v\nshutdown now",
        rationale="r\x1b[2J",
    )
    script = render_script([ScriptStep(step, "deferred\nhalt", live=False)], host="h\nid", plan_hash="p", generated_at="now")
    live = [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert live == ["set -euo pipefail"]
    assert "\x1b" not in script


def _crafted_seed(root: Path) -> str:
    """The seed with a PCI device whose name is shell, listed in sysfs and answered by NVML."""
    evil = "0000:c1:00.0$(touch${IFS}/tmp/rigaudit-pwned)"
    target = f"../../../devices/pci0000:c0/{evil}"
    set_link(root, f"/sys/bus/pci/devices/{evil}", target)
    for name, value in (("vendor", "0x10de\n"), ("class", "0x030200\n"), ("numa_node", "0\n")):
        set_file(root, f"/sys/devices/pci0000:c0/{evil}/{name}", value)
    set_nvml(root, "nvmlDeviceGetPciInfo", [0], {"busId": "00000000:41:00.0;reboot", "pciDeviceId": 0})
    return evil


def test_a_crafted_device_name_never_reaches_the_report_or_the_script(tmp_path: Path) -> None:
    root = light_copy(SEED, tmp_path / "seed")
    _crafted_seed(root)
    report, audit = tmp_path / "system-improve.md", tmp_path / "a.json"
    main(["audit", "--snapshot", str(root), "--no-live", "--no-transcript", "--report", str(report), "--json", str(audit)])
    script = tmp_path / "hv.sh"
    code = main(
        [
            "apply",
            "--snapshot",
            str(root),
            "--into",
            str(tmp_path / "copy"),
            "--plan",
            str(audit),
            "--yes",
            "--no-transcript",
            "--journal",
            str(tmp_path / "j.jsonl"),
            "--emit-script",
            str(script),
        ]
    )
    assert code in (0, 1)
    for text in (report.read_text(), script.read_text(), audit.read_text()):
        assert "rigaudit-pwned" not in text and ";reboot" not in text
    steps = json.loads(audit.read_text())["plan"]["steps"]
    devices = [d for s in steps for a in s["actions"] if a["type"] == "pci_register" for d in a["devices"]]
    assert devices and all(names.bdf(d) for d in devices)
    assert not Path("/tmp/rigaudit-pwned").exists()
