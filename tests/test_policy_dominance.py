"""Properties over the corpus: deny dominates, spellings are equal, resolution is idempotent, magic links are their targets.

Every case is judged on the model host (tests/support/policy_host.py).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigaudit.tools.policy import judge_argv, judge_command_line
from rigaudit.tools.policy.resolve import resolve
from tests.support.policy_host import MODEL_HOST
from tests.test_policy_corpus import CASES

_LINE_ONLY = ("shell-operators", "shell-comment", "expansion", "too-long", "nul-byte", "empty", "unparseable", "control-chars")


def _argv(command: str) -> list[str] | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    return argv or None


DENIED = [
    argv
    for _, label, command in CASES
    if label == "deny" and (argv := _argv(command)) and judge_command_line(command, MODEL_HOST).rule not in _LINE_ONLY
]
"""Every must-deny line of the corpus that an argv can carry."""

EXTRA = ["/proc/1/environ", "/proc/self/environ", "/etc/os-release", "/proc/cpuinfo", "-q", "-v", "x", "0", "1"]
"""Arguments with no power of their own: adding any of them, anywhere, never makes a denied command acceptable.
(Not ``--``: after it, options are operands, so ``grep -- -r x /`` searches nothing recursively; not ``-n``:
``ls -n /proc/1/root`` shows the link instead of listing that process's root.)"""


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DENIED), st.lists(st.tuples(st.sampled_from(EXTRA), st.integers(1, 12)), max_size=3), st.randoms())
def test_deny_dominates_any_order_and_any_added_argument(argv: list[str], extra: list[tuple[str, int]], rnd: object) -> None:
    words = list(argv)
    for word, position in extra:
        words.insert(min(position, len(words)), word)
    verdict = judge_argv(words, MODEL_HOST)
    assert verdict.decision == "deny", (argv, words, verdict)
    shuffled = words[1:]
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    verdict = judge_argv([words[0], *shuffled], MODEL_HOST)
    assert verdict.decision == "deny", (argv, shuffled, verdict)


def test_the_issue_s_examples_stay_denied_with_an_environ_read_appended() -> None:
    for command in ("rm -rf X", "bash -c reboot", "nvidia-smi -r", "sudo cat /etc/hostname"):
        for argv in (
            [*shlex.split(command), "/proc/1/environ"],
            [shlex.split(command)[0], "/proc/1/environ", *shlex.split(command)[1:]],
        ):
            verdict = judge_argv(argv, MODEL_HOST)
            assert verdict.decision == "deny" and "environment" not in verdict.reason, (argv, verdict)


# -- every spelling of the same options --------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A getopt program: its single-letter flags (with long names where it has them) and valued options."""

    program: str
    flags: dict[str, str | None]
    valued: dict[str, tuple[str | None, str]]
    tail: tuple[tuple[str, ...], ...]
    """What follows the options (one is drawn): verbs and operands."""


SPECS = (
    Spec("lspci", {"v": None, "n": None, "k": None, "D": None, "t": None, "x": None}, {"s": (None, "03:00.0")}, ((),)),
    Spec(
        "dmesg",
        {"T": "--ctime", "k": "--kernel", "x": "--decode", "c": "--clear", "w": "--follow", "H": "--human"},
        {"l": ("--level", "err,warn")},
        ((),),
    ),
    Spec(
        "ls",
        {"l": None, "a": "--all", "h": "--human-readable", "d": "--directory", "R": "--recursive", "L": "--dereference"},
        {},
        (("/etc/modprobe.d",), ("/root",), ("/proc/1/cwd",), ("/sys/class/drm",), ("/etc",)),
    ),
    Spec(
        "head",
        {"q": "--quiet", "v": "--verbose"},
        {"n": ("--lines", "20"), "c": ("--bytes", "64")},
        (("/var/log/syslog",), ("/etc/shadow",), ("/dev/sda",), ("/opt/other/x",)),
    ),
    Spec(
        "grep",
        {"i": "--ignore-case", "n": "--line-number", "c": "--count", "r": "--recursive", "v": "--invert-match"},
        {"m": ("--max-count", "5"), "e": ("--regexp", "xid")},
        (("/var/log/kern.log",), ("/etc/modprobe.d",), ("/etc",), ("/var/log/apt",)),
    ),
    Spec(
        "journalctl",
        {"k": "--dmesg", "r": "--reverse", "q": "--quiet", "f": "--follow", "x": "--catalog"},
        {"n": ("--lines", "20"), "u": ("--unit", "nvidia-persistenced"), "p": ("--priority", "err")},
        ((),),
    ),
    Spec(
        "sysctl",
        {"n": "--values", "e": "--ignore", "N": "--names", "w": "--write"},
        {},
        (("vm.swappiness",), ("vm.swappiness=1",)),
    ),
    Spec(
        "systemctl",
        {"a": "--all", "l": "--full", "q": "--quiet", "r": "--recursive"},
        {"t": ("--type", "service"), "p": ("--property", "ActiveState"), "n": ("--lines", "5")},
        (("status", "nvidia-persistenced"), ("list-units",), ("stop", "x"), ("show", "x")),
    ),
    Spec(
        "stat",
        {"L": "--dereference", "t": "--terse"},
        {"c": ("--format", "%a")},
        (("/dev/shm",), ("/root/.ssh",), ("/proc/1/exe",)),
    ),
    Spec("modinfo", {"0": "--null"}, {"F": ("--field", "version")}, (("nvidia",),)),
    Spec("free", {"g": "--giga", "w": "--wide", "h": "--human", "t": "--total"}, {}, ((),)),
    Spec("uname", {"r": "--kernel-release", "s": "--kernel-name", "m": "--machine", "a": "--all"}, {}, ((),)),
    Spec("date", {"u": "--utc", "R": "--rfc-email", "s": None}, {"d": ("--date", "yesterday")}, ((), ("+%F",), ("1200",))),
    Spec("hostname", {"f": "--fqdn", "s": "--short", "I": "--all-ip-addresses", "b": "--boot"}, {}, ((), ("status",))),
    Spec(
        "readlink",
        {"f": "--canonicalize", "n": "--no-newline", "e": "--canonicalize-existing"},
        {},
        (("/proc/1/exe",), ("/root/.kube",)),
    ),
)


@st.composite
def spelled_twice(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    spec = draw(st.sampled_from(SPECS))
    letters = draw(st.lists(st.sampled_from(sorted(spec.flags)), max_size=4))
    valued = draw(st.lists(st.sampled_from(sorted(spec.valued)), max_size=2, unique=True)) if spec.valued else []
    tail = list(draw(st.sampled_from(spec.tail)))
    return _spell(draw, spec, letters, valued, tail), _spell(draw, spec, letters, valued, tail)


def _spell(draw: st.DrawFn, spec: Spec, letters: list[str], valued: list[str], tail: list[str]) -> list[str]:
    words: list[str] = []
    pending: list[str] = []
    for letter in draw(st.permutations(letters)) if letters else []:
        long = spec.flags[letter]
        style = draw(st.integers(0, 2))
        if style == 2 and long is not None and letters.count(letter) == 1:
            words.append(long)  # a repeated letter has no single long spelling (-x -x -x)
        elif style == 1:
            pending.append(letter)  # bundled with its neighbours
        else:
            words.append("-" + letter)
    bundle = -1
    if pending:
        bundle = len(words)
        words.append("-" + "".join(pending))
    for letter in valued:
        long, value = spec.valued[letter]
        style = draw(st.integers(0, 4))
        if style == 1:
            words.append(f"-{letter}{value}")
        elif style == 2 and long is not None:
            words.append(f"{long}={value}")
        elif style == 3 and long is not None:
            words += [long, value]
        elif style == 4 and bundle >= 0:
            words[bundle] += letter  # the valued letter ends the bundle, its value next: -kn 20
            words.insert(bundle + 1, value)
            bundle = -1
        else:
            words += [f"-{letter}", value]
    return [spec.program, *words, *tail]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spelled_twice())
def test_every_spelling_of_the_same_options_is_judged_alike(pair: tuple[list[str], list[str]]) -> None:
    first, second = (judge_argv(argv, MODEL_HOST) for argv in pair)
    assert first.decision == second.decision, (pair, first, second)


def test_lspci_x_counts_however_it_is_spelt() -> None:
    for argv in (
        ["lspci", "-x", "-x", "-x", "-x"],
        ["lspci", "-xxxx"],
        ["lspci", "-xx", "-x", "-s", "03:00.0", "-x"],
        ["lspci", "-vxx", "-x"],
    ):
        assert judge_argv(argv, MODEL_HOST).rule == "lspci-risky-read", argv
    for argv in (["lspci", "-x", "-x"], ["lspci", "-xx"], ["lspci", "-x", "-s", "03:00.0", "-x"]):
        assert judge_argv(argv, MODEL_HOST).decision == "allow", argv


# -- resolution ---------------------------------------------------------------------------------------

COMPONENTS = [
    "..",
    ".",
    "",
    "etc",
    "proc",
    "self",
    "root",
    "cwd",
    "1",
    "sys",
    "class",
    "drm",
    "card0",
    "device",
    "bin",
    "lib",
    "usr",
    "dev",
    "fd",
    "stdin",
    "var",
    "log",
    "gpu-report",
    "app",
    "current",
    "container-root",
    "mtab",
    "alternatives",
    "cuda",
    "local",
    "shadow",
    "modprobe.d",
    "zz-evil.conf",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=8), st.booleans())
def test_resolution_is_idempotent(parts: list[str], follow: bool) -> None:
    path = "/" + "/".join(parts)
    once = resolve(path, MODEL_HOST, follow_final=follow)
    if once.refused is not None:
        return
    twice = resolve(once.path, MODEL_HOST, follow_final=follow)
    assert twice.refused is None and twice.path == once.path, (path, once, twice)
    assert ".." not in once.path.split("/") and "//" not in once.path


READ_LINES = [
    argv
    for _, _, command in CASES
    if (argv := _argv(command))
    and len(argv) == 2
    and argv[0] in ("cat", "head", "strings", "wc", "xxd", "md5sum")
    and argv[1].startswith("/")
    and not argv[1].startswith(("/proc/self", "/proc/thread-self", "/dev/std", "/dev/fd"))
]
"""Reads of one absolute path in the corpus (allowed, asked about and denied ones)."""

SELF_LINKS = [
    "/proc/self/root",
    "/proc/self/cwd",
    "/proc/thread-self/root",
    "/proc/self/root/../..",
    "/proc/self/cwd/..",
    "/proc/self/task/7/root",
]
FOREIGN_LINKS = [
    "/proc/1/root",
    "/proc/4242/cwd",
    "/proc/1/task/1/root",
    "/proc/self/fd/3",
    "/dev/fd/4",
    "/proc/1/map_files/7f-80",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(READ_LINES), st.sampled_from(SELF_LINKS))
def test_a_path_through_the_commands_own_root_or_cwd_is_judged_like_its_target(argv: list[str], link: str) -> None:
    """Commands run in rigaudit's root with / as their working directory: /proc/self/root and cwd lead to /."""
    direct = judge_argv(argv, MODEL_HOST)
    through = judge_argv([argv[0], link + argv[1]], MODEL_HOST)
    assert through.decision == direct.decision, (argv, link, direct, through)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(READ_LINES), st.sampled_from(FOREIGN_LINKS))
def test_a_path_through_another_process_s_root_cwd_or_open_file_is_denied(argv: list[str], link: str) -> None:
    verdict = judge_argv([argv[0], link + argv[1]], MODEL_HOST)
    assert verdict.decision == "deny", (argv, link, verdict)
