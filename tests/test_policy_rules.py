"""The policy's rules as data: examples checked at load, argv entry point, building blocks, CLI."""

from __future__ import annotations

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.tools.policy import POLICY, Form, Policy, Rule, RuleError, engine, lexer, paths, vet_argv, vet_command_line
from rigaudit.tools.policy.engine import FALLBACKS
from rigaudit.tools.policy.fsview import EXAMPLE_HOST, LEXICAL
from rigaudit.tools.policy.rules import RULES

_NVSMI_BAD_ALLOW = Rule(
    "bad-allow",
    "allow",
    "claims a reset is a query",
    examples=("nvidia-smi -r",),
    programs=("nvidia-smi",),
    form=Form(flags=("-r",)),
)


def test_every_rule_has_examples_vetted_by_itself() -> None:
    assert len(RULES) >= 100
    for rule in RULES:
        assert rule.examples, rule.name
        for example in rule.examples:
            verdict = vet_command_line(example, EXAMPLE_HOST)
            assert (verdict.decision, verdict.rule) == (rule.decision, rule.name), example


def test_an_example_that_disagrees_with_its_rule_fails_at_load() -> None:
    with pytest.raises(RuleError, match=r"bad-allow.*nvidia-smi -r.*vetted deny by 'nvidia-smi-state'"):
        Policy([*RULES, _NVSMI_BAD_ALLOW])


def test_an_example_decided_by_another_rule_fails_at_load() -> None:
    shadowed = Rule("shadowed", "allow", "uname again", examples=("uname -r",), programs=("uname",), form=Form(flags=("-r",)))
    with pytest.raises(RuleError, match="vetted allow by 'kernel-info'"):
        Policy([*RULES, shadowed])


def test_check_examples_can_be_deferred_but_still_fails() -> None:
    policy = Policy([*RULES, _NVSMI_BAD_ALLOW], check_examples=False)
    with pytest.raises(RuleError):
        policy.check_examples()


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (Rule("x", "deny", "d", examples=()), "at least one example"),
        (Rule("x", "deny", "d", examples=("a",)), "a guard .* needs a check"),
        (Rule("x", "deny", "d", examples=("a",), check="no-such-check"), "unknown check"),
        (Rule("x", "allow", "d", examples=("a",), programs=("a",)), "allow rule needs programs and a form"),
        (Rule("x", "deny", "d", examples=("a",), programs=("a",), form=Form()), "only allow rules have a form"),
        (Rule("x", "deny", "d", examples=("a",), programs=("a",), any_arg=("(",)), "bad pattern"),
        (Rule("x", "allow", "d", examples=("a",), programs=("a",), form=Form(flags=("[",))), "bad pattern"),
    ],
)
def test_malformed_rules_fail_at_load(rule: Rule, message: str) -> None:
    with pytest.raises(RuleError, match=message):
        Policy([rule], check_examples=False)


def test_duplicate_rule_names_fail_at_load() -> None:
    with pytest.raises(RuleError, match="duplicate rule names: kernel-info"):
        Policy([*RULES, RULES[[r.name for r in RULES].index("kernel-info")]], check_examples=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["dmesg"],
        ["uname", "-r"],
        ["uname", "-a"],
        ["systemctl", "is-active", "nvidia-persistenced"],
        ["systemctl", "is-active", "nvidia-fabricmanager"],
        ["systemd-detect-virt"],
        ["systemd-detect-virt", "--container"],
        ["systemd-detect-virt", "--vm"],
        ["systemd-detect-virt", "-c"],
        ["nvidia-smi", "topo", "-m"],
        ["lspci"],
        ["lspci", "-nn"],
        ["lspci", "-vvv"],
        ["lspci", "-nnvvv"],
        ["lspci", "-D"],
        ["lspci", "-Dvvv"],
        ["pveversion"],
        ["pct", "list"],
        ["tuned-adm", "active"],
        ["cat", "/proc/version"],
        ["grep", "-E", "a|b", "/proc/cpuinfo"],
        ["dpkg-query", "-W", "-f", "${Version}", "nvidia-kernel-common"],
    ],
)
def test_investigator_commands_are_allowed(argv: list[str]) -> None:
    verdict = vet_argv(argv)  # on this machine, as the audit vets them
    assert verdict.decision == "allow", verdict
    assert verdict.argv == tuple(argv)


@pytest.mark.parametrize(
    ("argv", "rule"),
    [
        ([], "empty"),
        ([""], "empty"),
        (["nvidia-smi", "-r"], "nvidia-smi-state"),
        (["cat", "/etc/shadow\x00"], "nul-byte"),
        (["cat", "/proc/cmdline", ";", "reboot"], "operator-word"),
        (["cat", "$(reboot)"], "expansion"),
        (["x" * 5000], "too-long"),
        (["FOO=1", "nvidia-smi"], "env-prefix"),
        (["/tmp/nvidia-smi", "-L"], "program-path"),
        (["nvidia-sm\u0456", "-L"], "program-lookalike"),
        (["sh", "-c", "printf 'x' > /etc/modprobe.d/x.conf"], "interpreter"),
        (["systemctl", "reboot"], "systemctl-change"),
        (["nvidia-modprobe", "-c0", "-u"], "kernel-modules"),
        (["cat", "/proc/../etc/shadow"], "secret-path"),
    ],
)
def test_vet_argv_denies_without_a_shell(argv: list[str], rule: str) -> None:
    verdict = vet_argv(argv, LEXICAL)
    assert (verdict.decision, verdict.rule) == ("deny", rule), verdict


def test_dcgm_diagnostics_ask_since_they_load_the_gpus() -> None:
    assert vet_argv(["dcgmi", "diag", "-r", "1"]).decision == "ask"


def test_unknown_programs_and_forms_ask_or_deny_with_a_hint() -> None:
    unknown = vet_command_line("frobnicate --now", LEXICAL)
    assert (unknown.decision, unknown.rule) == ("ask", "unknown-program")
    unbounded = vet_command_line("journalctl -k --no-pager", LEXICAL)
    assert (unbounded.decision, unbounded.rule) == ("ask", "unbounded-read") and "-n" in unbounded.reason
    reader = vet_command_line("uname --frobnicate", LEXICAL)
    assert (reader.decision, reader.rule) == ("ask", "unrecognized-form") and "`uname -r`" in reader.reason
    changer = vet_command_line("journalctl --rot", LEXICAL)  # getopt_long would take it for --rotate
    assert (changer.decision, changer.rule) == ("deny", "not-a-read-form")
    assert "journalctl -k --no-pager -n 200" in changer.reason


def test_policy_errors_fail_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(line: str) -> list[str]:
        raise RuntimeError(line)

    monkeypatch.setattr(lexer, "split", boom)
    verdict = POLICY.vet_line("nvidia-smi -L")
    assert (verdict.decision, verdict.rule) == ("deny", "policy-error")


def test_program_names_are_normalized() -> None:
    assert engine.program_name("/usr/bin/nvidia-smi") == "nvidia-smi"
    assert engine.program_name("python3.11") == "python"
    assert engine.program_name("pip3") == "pip"
    assert engine.program_name("mkfs.ext4") == "mkfs"
    assert engine.program_name("nvidia-smi") == "nvidia-smi"


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        ("echo 'a;b'", []),
        ('echo "a;b"', []),
        ("echo a\\;b", []),
        ("echo '$(x)'", []),
        ('echo "$(x)"', ["expansion"]),
        ('echo "`x`"', ["expansion", "expansion"]),
        ("a;b", ["operator"]),
        ("a 2>&1", ["operator"]),
        ("x #c", ["comment"]),
        ("x#c", []),
        ("cost $ 5", []),
        ("diff <(a) b", ["expansion", "operator"]),
    ],
)
def test_scanner_sees_what_a_shell_would(line: str, kinds: list[str]) -> None:
    assert [s.kind for s in lexer.scan(line)] == kinds


def test_path_building_blocks() -> None:
    assert paths.normalize("//etc//./shadow") == "/etc/shadow"
    assert paths.normalize("/proc/../etc/shadow") == "/etc/shadow"
    assert paths.is_secret(paths.as_absolute("../../etc/shadow"))
    assert paths.is_secret("/home/u/.ssh/known_hosts")
    assert not paths.is_secret("/etc/ssh/sshd_config") and not paths.is_secret("/etc/passwd")
    assert paths.holds_secrets("/etc") and paths.holds_secrets("/") and paths.holds_secrets("/proc")
    assert paths.holds_secrets("/etc/nvidia") and paths.holds_secrets("/etc/apt")  # tokens and credentials inside
    assert not paths.holds_secrets("/etc/modprobe.d") and not paths.holds_secrets("/sys")
    assert paths.readable("/proc/cmdline", LEXICAL) is None
    assert paths.readable("/home/u/x", LEXICAL) is not None


def test_cli_check_prints_the_verdict_word_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check", "nvidia-smi -pm 1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("deny ") and out.count("\n") == 1 and "nvidia-smi-state" in out
    assert main(["policy", "check", "nvidia-smi", "-L"]) == 0
    assert capsys.readouterr().out.startswith("allow ")
    assert main(["policy", "check", "cat /proc/1/environ"]) == 0
    assert capsys.readouterr().out.startswith("ask ")
    assert main(["policy", "check", "uname\nreboot"]) == 0
    assert capsys.readouterr().out.count("\n") == 1


def test_cli_check_without_a_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check"]) == 2
    assert "give the command" in capsys.readouterr().err


def test_cli_list_prints_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = [(r.name, r.decision) for r in RULES] + [(name, decision) for name, decision, _ in FALLBACKS]
    assert [tuple(line.split()[:2]) for line in lines] == expected
