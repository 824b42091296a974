"""Properties of the policy: a state-changing command is never allowed, however it is dressed up; deny
dominates whatever the argument order and whatever is added; every spelling of an option is vetted
alike; path resolution is idempotent; a path through a magic link is vetted like its target.

Vetted on the model host (tests/support/policy_host.py), so the verdicts never depend on this machine.
"""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from rigaudit.tools.policy import vet_argv, vet_command_line
from tests.support.policy_host import MODEL_HOST

NVSMI_STATE_FLAGS = [
    ["-r"],
    ["--gpu-reset"],
    ["-pm", "1"],
    ["-pm", "0"],
    ["--persistence-mode=1"],
    ["-pl", "300"],
    ["--power-limit=300"],
    ["-lgc", "1500"],
    ["-rgc"],
    ["-lmc", "5001"],
    ["-rmc"],
    ["-ac", "1215,1410"],
    ["-rac"],
    ["-acp", "0"],
    ["-mig", "1"],
    ["-e", "0"],
    ["-c", "0"],
    ["--compute-mode=DEFAULT"],
    ["--auto-boost-default=0"],
    ["--auto-boost-permission=0"],
    ["-q", "-f", "/tmp/x"],
]

STATE_CHANGING = [
    ["sysctl", "-w", "kernel.numa_balancing=0"],
    ["sysctl", "vm.swappiness=1"],
    ["sysctl", "-p"],
    ["sysctl", "--system"],
    ["setpci", "-s", "03:00.0", "CAP_EXP+8.w=5000:7000"],
    ["setpci", "-s", "00:01.1", "ECAP_ACS+6.w=0"],
    ["modprobe", "nvidia_peermem"],
    ["modprobe", "-r", "nouveau"],
    ["insmod", "/tmp/x.ko"],
    ["rmmod", "nvidia"],
    ["rm", "-rf", "/"],
    ["dd", "if=/dev/zero", "of=/dev/sda"],
    ["tee", "/proc/sys/vm/drop_caches"],
    ["mv", "/a", "/b"],
    ["cp", "/tmp/x", "/etc/x"],
    ["chmod", "777", "/dev/nvidia0"],
    ["chown", "root", "/x"],
    ["kill", "-9", "1"],
    ["pkill", "python3"],
    ["killall", "x"],
    ["systemctl", "stop", "nvidia-persistenced"],
    ["systemctl", "daemon-reload"],
    ["systemctl", "enable", "--now", "x"],
    ["systemctl", "mask", "x"],
    ["systemctl", "isolate", "rescue.target"],
    ["cpupower", "frequency-set", "-g", "performance"],
    ["cpupower", "idle-set", "-D", "0"],
    ["reboot"],
    ["shutdown", "-h", "now"],
    ["poweroff"],
    ["halt"],
    ["kexec", "-e"],
    ["mount", "/dev/sda1", "/mnt"],
    ["umount", "/mnt"],
    ["mkfs.ext4", "/dev/sdb"],
    ["wipefs", "-a", "/dev/sdb"],
    ["parted", "/dev/sda", "rm", "1"],
    ["apt", "install", "x"],
    ["dpkg", "-i", "x.deb"],
    ["pip", "install", "x"],
    ["curl", "http://x"],
    ["wget", "http://x"],
    ["nc", "-l", "1"],
    ["ssh", "h"],
    ["scp", "a", "b:c"],
    ["rsync", "-a", "a", "b:"],
    ["pct", "set", "101", "-memory", "1"],
    ["pct", "exec", "101", "--", "ls"],
    ["qm", "start", "100"],
    ["dmesg", "-c"],
    ["dmesg", "-C"],
    ["dmesg", "-n", "1"],
    ["journalctl", "--vacuum-size=1M"],
    ["nvidia-smi", "mig", "-dgi"],
    ["ip", "link", "set", "eth0", "down"],
    ["cat", "/etc/shadow"],
    ["cat", "/root/.ssh/id_rsa"],
    ["grep", "-r", "x", "/"],
    ["python3", "-c", "import os"],
    ["bash", "-c", "reboot"],
    ["sh", "-c", "id"],
    ["perl", "-e", "1"],
    ["find", "/", "-delete"],
    ["find", "/sys", "-exec", "cat", "{}", "+"],
    ["xargs", "rm"],
]

WRAPPERS = [
    [],
    ["sudo"],
    ["sudo", "-u", "root"],
    ["sudo", "-E"],
    ["doas"],
    ["su", "-c"],
    ["env", "X=1"],
    ["env"],
    ["X=1"],
    ["LD_PRELOAD=/tmp/x.so"],
    ["timeout", "5"],
    ["nice", "-n", "5"],
    ["nohup"],
    ["command"],
    ["exec"],
    ["busybox"],
    ["watch"],
    ["stdbuf", "-o0"],
    ["strace", "-f"],
    ["numactl", "-N", "0"],
    ["taskset", "-c", "0"],
    ["xargs"],
    ["pkexec"],
]

SAFE = ["nvidia-smi -L", "uname -r", "dmesg", "cat /proc/cmdline", "true", "lspci"]
OPERATORS = [";", "&&", "||", "|", "&", "\n", ";\n", " ; "]


@st.composite
def state_changing_argv(draw: st.DrawFn) -> list[str]:
    if draw(st.booleans()):
        flags = draw(st.sampled_from(NVSMI_STATE_FLAGS))
        extra = draw(st.sampled_from([[], ["-i", "0"], ["-q"], ["-L"], ["--format=csv"]]))
        args = draw(st.permutations([*flags, *extra])) if draw(st.booleans()) else [*extra, *flags]
        return ["nvidia-smi", *args]
    return list(draw(st.sampled_from(STATE_CHANGING)))


def _quote_word(word: str, style: int) -> str:
    if style == 0 or not word:
        return shlex.quote(word)
    if style == 1:
        return "'" + word.replace("'", "'\\''") + "'"
    if style == 2 and '"' not in word and "$" not in word and "`" not in word and "\\" not in word:
        return '"' + word + '"'
    if style == 3 and len(word) > 1 and word.isascii() and word.replace("-", "").replace(".", "").isalnum():
        half = len(word) // 2
        return word[:half] + "''" + word[half:]
    return shlex.quote(word)


@st.composite
def disguised_line(draw: st.DrawFn) -> str:
    argv = draw(state_changing_argv())
    program = argv[0]
    prefix_dir = draw(st.sampled_from(["", "", "/usr/bin/", "/sbin/", "/tmp/", "./", "/usr/bin/../../tmp/", "/usr/local/bin/"]))
    argv = [prefix_dir + program, *argv[1:]]
    wrapper = draw(st.sampled_from(WRAPPERS))
    words = [*wrapper, *argv]
    line = " ".join(_quote_word(w, draw(st.integers(0, 3))) for w in words)
    shape = draw(st.integers(0, 7))
    safe = draw(st.sampled_from(SAFE))
    op = draw(st.sampled_from(OPERATORS))
    if shape == 1:
        line = f"{safe}{op}{line}"
    elif shape == 2:
        line = f"{line}{op}{safe}"
    elif shape == 3:
        line = f"{safe} $({line})"
    elif shape == 4:
        line = f"{safe} `{line}`"
    elif shape == 5:
        line = f"bash -c {shlex.quote(line)}"
    elif shape == 6:
        line = f'{safe} "$({line})"'
    elif shape == 7:
        line = "  \t" + line + draw(st.sampled_from(["", " ", " #", " > /dev/null", " 2>&1"]))
    return line


@given(disguised_line())
def test_state_changing_commands_are_never_allowed(line: str) -> None:
    verdict = vet_command_line(line, MODEL_HOST)
    assert verdict.decision != "allow", (line, verdict)


@given(state_changing_argv(), st.sampled_from(WRAPPERS))
def test_state_changing_argv_is_never_allowed(argv: list[str], wrapper: list[str]) -> None:
    verdict = vet_argv([*wrapper, *argv], MODEL_HOST)
    assert verdict.decision != "allow", ([*wrapper, *argv], verdict)


@given(st.text(alphabet=st.sampled_from("ab -/.;|&$`'\"\\()<>#*~=\t\n\x00\u0456\u2013\u200b"), max_size=40))
def test_arbitrary_text_never_raises_and_gets_a_verdict(line: str) -> None:
    verdict = vet_command_line(line, MODEL_HOST)
    assert verdict.decision in ("allow", "ask", "deny")
    assert "\n" not in verdict.reason
