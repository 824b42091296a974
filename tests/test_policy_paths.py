"""Paths are vetted where the kernel opens them: magic links, live symlinks, unstable directories, the allow-list."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import anyio
import pytest

from rigaudit.agents.llm.functions import ModelFunctions
from rigaudit.tools.hosts.local import LocalHost
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.policy import LEXICAL, LIVE, Verdict, filesystem_for, paths, vet_argv, vet_command_line
from rigaudit.tools.policy.resolve import resolve
from rigaudit.tools.policy.shell import SandboxedShell
from tests.support.policy_host import MODEL_HOST

SEED = Path(__file__).parent / "fixtures" / "seed-lxc-8x-rtxpro6000"


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("/proc/self/root/../../root/.profile", "/root/.profile"),  # '..' from where the magic link led: /
        ("/proc/self/root/../../../proc/1/mem", "/proc/1/mem"),
        ("/proc/self/cwd/etc/hostname", "/etc/hostname"),  # commands run in /
        ("/proc/thread-self/root/etc/hosts", "/etc/hosts"),
        ("/bin/../etc/shadow", "/usr/etc/shadow"),  # merged /usr: /bin is usr/bin, its .. is /usr
        ("/etc/mtab", "/proc/self/mounts"),
        ("/sys/bus/pci/devices/0000:03:00.0/../../..", "/sys/devices"),
        ("/sys/class/drm/card0/device", "/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/drm/card0/device"),
        ("/var/log/gpu-report", "/root/.ssh/id_rsa"),
        ("/usr/local/cuda/include", "/usr/local/cuda-12.8/include"),
        ("//etc/./modprobe.d//nvidia.conf", "/etc/modprobe.d/nvidia.conf"),
        ("etc/hostname", "/etc/hostname"),
    ],
)
def test_resolution_follows_links_as_the_kernel(path: str, where: str) -> None:
    resolved = resolve(path, MODEL_HOST)
    assert resolved.refused is None and resolved.path == where, resolved


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/proc/1/root/etc/shadow", "another process's root"),
        ("/proc/4242/cwd/x", "another process's root or working directory"),
        ("/proc/1/task/1/root/etc", "another process's root"),
        ("/proc/self/fd/3", "open file"),
        ("/dev/stdin", "open file"),
        ("/dev/fd/0/x", "open file"),
        ("/proc/self/exe", "executable"),
        ("/proc/1/map_files/7f00-7f01", "open file"),
        ("/proc/1/ns/net", "namespace"),
        ("/var/log/container-root/etc/hostname", "another process's root"),  # a plain link into a magic one
        ("/var/log/loop", "too many levels"),
    ],
)
def test_what_cannot_be_resolved_by_name_is_refused(path: str, why: str) -> None:
    resolved = resolve(path, MODEL_HOST)
    assert resolved.refused is not None and why in resolved.refused, resolved


def test_a_final_magic_link_may_be_named_without_following_it() -> None:
    assert resolve("/proc/1/exe", MODEL_HOST, follow_final=False).kind == "link"
    assert resolve("/proc/1/cwd/", MODEL_HOST, follow_final=False).refused  # a trailing slash follows it
    assert vet_command_line("readlink /proc/1/cwd", MODEL_HOST).decision == "allow"
    assert vet_command_line("ls -l /proc/1/exe", MODEL_HOST).decision == "allow"
    assert vet_command_line("ls /proc/1/root", MODEL_HOST).decision == "deny"  # lists that process's root
    assert vet_command_line("cat /proc/1/exe", MODEL_HOST).decision == "deny"


def test_a_name_someone_untrusted_can_swap_is_unstable() -> None:
    resolved = resolve("/var/log/app/current", MODEL_HOST)
    assert resolved.path == "/etc/shadow" and resolved.unstable and "uid 1000" in resolved.unstable
    assert resolve("/var/log/syslog", MODEL_HOST).unstable is None
    assert resolve("/proc/4242/status", MODEL_HOST).unstable is None  # procfs: made by the kernel
    verdict = vet_command_line("tail -n 5 /var/log/app/worker.log", MODEL_HOST)
    assert (verdict.decision, verdict.rule) == ("deny", "unstable-path") and "swap" in verdict.reason


def test_reasons_name_both_the_path_and_where_it_leads() -> None:
    verdict = vet_command_line("cat /proc/self/root/../../root/.ssh/id_rsa", MODEL_HOST)
    assert verdict.decision == "deny" and "/root/.ssh/id_rsa" in verdict.reason and "opens" in verdict.reason


# -- the read allow-list --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/proc/cmdline",
        "/proc/4242/limits",
        "/sys/bus/pci/devices/0000:03:00.0/vendor",
        "/etc/os-release",
        "/etc/modprobe.d/nvidia.conf",
        "/etc/nvidia/gridd.conf",
        "/var/log/kern.log.1",
        "/boot/config-6.8.12-11-pve",
        "/opt/torch/.venv/lib/python3.12/site-packages/torch/version.py",
        "/root/.nccl.conf",
        "/usr/share/nvidia/nvswitch/fabricmanager.cfg",
        "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
    ],
)
def test_what_audits_read_is_on_the_allow_list(path: str) -> None:
    assert paths.vet_read(path, MODEL_HOST) is None


@pytest.mark.parametrize(
    ("path", "decision"),
    [
        ("/etc/environment", "ask"),  # not a known secret, not needed: a person decides
        ("/opt/other/config.yaml", "ask"),
        ("/var/log/auth.log", "ask"),
        ("/proc/4242/environ", "ask"),
        ("/sys/firmware/efi/efivars/db-d719b2cb-3d3a-4596-a3bc-dad00e67656f", "ask"),
        ("/dev/null", "ask"),
        ("/etc/apt/auth.conf.d/corp.conf", "deny"),
        ("/etc/nvidia/ClientConfigToken/x.tok", "deny"),
        ("/var/lib/kubelet/kubeconfig", "deny"),
        ("/run/containers/0/auth.json", "deny"),
        ("/dev/sda", "deny"),
        ("/dev/tty1", "deny"),
        ("/run/app.sock", "deny"),
        ("/sys/bus/pci/devices/0000:03:00.0/resource0", "deny"),
        ("/proc/kmsg", "deny"),
    ],
)
def test_everything_else_is_asked_about_and_secrets_and_devices_denied(path: str, decision: str) -> None:
    problem = paths.vet_read(path, MODEL_HOST)
    assert problem is not None and problem.decision == decision, problem


# -- this machine's file system -------------------------------------------------------------------------


def test_live_links_are_vetted_on_their_targets(tmp_path: Path) -> None:
    (tmp_path / "to-shadow").symlink_to("/etc/shadow")
    (tmp_path / "to-root").symlink_to("/proc/self/root")
    (tmp_path / "to-foreign").symlink_to("/proc/1/root")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "hop").symlink_to("../" + tmp_path.name + "/to-shadow")
    for name, rule in (("to-shadow", "secret-path"), ("hop", "secret-path"), ("to-foreign/etc/hostname", "magic-link")):
        verdict = vet_argv(["cat", str(tmp_path / name)], LIVE)
        assert (verdict.decision, verdict.rule) == ("deny", rule), (name, verdict)
    assert resolve(str(tmp_path / "to-root/../../etc/passwd"), LIVE).path == "/etc/passwd"
    assert resolve(str(tmp_path / "loop"), LIVE).refused
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert resolve(str(fifo), LIVE).kind == "fifo" and resolve("/dev/null", LIVE).kind == "char"
    assert paths.device_problem(str(fifo), LIVE) is not None


def test_a_directory_anyone_can_write_makes_its_entries_unstable(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "log").write_text("x")
    shared.chmod(0o777)
    assert resolve(str(shared / "log"), LIVE).unstable
    shared.chmod(0o1777)  # sticky, and the entry is ours: only we could swap it
    assert resolve(str(shared / "log"), LIVE).unstable is None
    shared.chmod(0o755)
    assert resolve(str(shared / "log"), LIVE).unstable is None


def test_the_live_and_lexical_views_agree_where_no_link_is_met() -> None:
    for line in ("cat /proc/cmdline", "cat /proc/self/root/proc/cmdline", "cat /proc/1/root/etc/x", "cat /proc/kcore"):
        assert vet_command_line(line, LIVE).decision == vet_command_line(line, LEXICAL).decision, line


def test_each_host_is_vetted_on_its_own_view() -> None:
    assert filesystem_for(LocalHost()) is LIVE
    assert filesystem_for(SnapshotHost(SEED)) is LEXICAL


# -- the agents' shell and read_file --------------------------------------------------------------------


def test_vetting_that_hangs_on_the_file_system_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def stuck(line: str) -> Verdict:
        release.wait(30)
        return Verdict("allow", "never seen", ("true",), "x")

    monkeypatch.setattr("rigaudit.tools.policy.shell.VET_TIMEOUT_S", 0.05)
    shell = SandboxedShell(SnapshotHost(SEED), policy=stuck)
    try:
        outcome = anyio.run(shell.execute, "cat /etc/pve/lxc/101.conf")
    finally:
        release.set()
    assert not outcome.ran and (outcome.verdict.decision, outcome.verdict.rule) == ("deny", "policy-timeout")


def _read_file(path: str) -> str:
    async def go() -> str:
        tools = ModelFunctions(Probe(SnapshotHost(SEED)), approver=None)
        return (await tools.call("read_file", json.dumps({"path": path}))).text

    return anyio.run(go)


def test_read_file_reads_what_was_vetted() -> None:
    assert _read_file("/proc/self/root/../../root/.ssh/id_rsa").startswith("not read")
    assert _read_file("/proc/1/root/etc/hostname").startswith("not read")
    assert _read_file("/proc/self/root/../../etc/shadow").startswith("not read")
    through = _read_file("/proc/self/cwd/../proc/cmdline")
    assert "cite as file:/proc/cmdline" in through  # read where it leads, not a textual '..' collapse
