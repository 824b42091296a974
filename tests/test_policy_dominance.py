"""Properties over the corpus: deny dominates, spellings are equal, resolution is idempotent, magic links are their targets.

Every case is vetted on the model host (tests/support/policy_host.py).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from random import Random

from hypothesis import given
from hypothesis import strategies as st

from rigaudit.tools.policy import POLICY, vet_argv, vet_command_line
from rigaudit.tools.policy.engine import program_name
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
    if label == "deny" and (argv := _argv(command)) and vet_command_line(command, MODEL_HOST).rule not in _LINE_ONLY
]
"""Every must-deny line of the corpus that an argv can carry."""

EXTRA = ["/proc/1/environ", "/proc/self/environ", "/etc/os-release", "/proc/cpuinfo", "-q", "-v", "x", "0", "1"]
"""Arguments with no power of their own: adding any of them, anywhere, never makes a denied command acceptable.
(Not ``--``: after it, options are operands, so ``grep -- -r x /`` searches nothing recursively; not ``-n``:
``ls -n /proc/1/root`` shows the link instead of listing that process's root.)"""


def _valued(program: str) -> tuple[frozenset[str], frozenset[str]]:
    """The program's options that take a value, by the policy's own forms: (every such option, getopt letters)."""
    forms = [r.form for r in POLICY.rules if program in r.programs and r.form is not None]
    every = frozenset(option for form in forms for option in form.valued)
    letters = frozenset(o[1] for form in forms if form.getopt for o in form.valued if len(o) == 2 and o[0] == "-")
    return every, letters


def _takes_next(word: str, valued: frozenset[str], letters: frozenset[str]) -> bool:
    """``word`` is an option whose value is the next argument (``-e``, or a getopt bundle ending in one: ``-ne``)."""
    if word in valued:
        return True
    if word.startswith("--") or not word.startswith("-") or len(word) < 3:
        return False
    first = next((i for i, letter in enumerate(word[1:], start=1) if letter in letters), None)
    return first == len(word) - 1  # a value-taking letter before the end takes the rest of the word as its value


def units(argv: list[str]) -> list[list[str]]:
    """The arguments as the program reads them: an option with its value is one unit, every other word one.

    Moving an option's value away from it changes the command (``grep -d x recurse /etc`` is an invalid
    ``-d x``, which grep refuses, not ``-d recurse``), so properties move and insert only whole units.
    """
    valued, letters = _valued(program_name(argv[0]))
    out: list[list[str]] = []
    words = iter(argv[1:])
    options_done = False
    for word in words:
        unit = [word]
        options_done = options_done or word == "--"
        if not options_done and _takes_next(word, valued, letters) and (value := next(words, None)) is not None:
            unit.append(value)
        out.append(unit)
    return out


def test_units_keep_an_option_with_its_value() -> None:
    assert units(["grep", "-d", "recurse", "-ne", "-r", "x", "/etc"]) == [["-d", "recurse"], ["-ne", "-r"], ["x"], ["/etc"]]
    assert units(["grep", "-drecurse", "-m5", "--", "-e", "/etc"]) == [["-drecurse"], ["-m5"], ["--"], ["-e"], ["/etc"]]
    assert units(["od", "-An", "-tx1", "/etc/shadow"]) == [["-An"], ["-tx1"], ["/etc/shadow"]]
    assert units(["head", "-c", "1", "-qn", "5", "/dev/watchdog0"]) == [["-c", "1"], ["-qn", "5"], ["/dev/watchdog0"]]


def _has_subcommands(program: str) -> bool:
    return any(program in r.programs and r.first for r in POLICY.rules)


def reordered(program: str, parts: list[list[str]], rnd: Random) -> list[list[str]]:
    """The units in another order the program reads as the same command: options (with their values) anywhere
    before ``--``, operands in their order (getopt permutes options, never operands: ``grep x /etc`` is not
    ``grep /etc x``), ``--`` and what follows it last, and for a program with subcommands the first unit first
    (``nvidia-smi -i 0 nvlink -s`` is the query mode given an operand, not the nvlink subcommand)."""
    cut = next((i for i, unit in enumerate(parts) if unit == ["--"]), len(parts))
    head_len = 1 if _has_subcommands(program) else 0
    head, body, tail = parts[:head_len], parts[head_len:cut], parts[cut:]
    operands = iter([unit for unit in body if not _is_option(unit)])
    mixed = list(body)
    rnd.shuffle(mixed)
    return [*head, *(next(operands) if not _is_option(unit) else unit for unit in mixed), *tail]


def _is_option(unit: list[str]) -> bool:
    return unit[0].startswith("-") and unit[0] != "-"


@given(st.sampled_from(DENIED), st.lists(st.tuples(st.sampled_from(EXTRA), st.integers(0, 12)), max_size=3), st.randoms())
def test_deny_dominates_any_order_and_any_added_argument(argv: list[str], extra: list[tuple[str, int]], rnd: Random) -> None:
    """Added words go between units, wherever; the order changes as :func:`reordered` says (the same command)."""
    parts = units(argv)
    for word, position in extra:
        parts.insert(min(position, len(parts)), [word])
    words = [argv[0], *(w for unit in parts for w in unit)]
    verdict = vet_argv(words, MODEL_HOST)
    assert verdict.decision == "deny", (argv, words, verdict)
    shuffled = [argv[0], *(w for unit in reordered(program_name(argv[0]), parts, rnd) for w in unit)]
    verdict = vet_argv(shuffled, MODEL_HOST)
    assert verdict.decision == "deny", (argv, shuffled, verdict)


def test_a_reordering_keeps_operands_in_order_and_the_subcommand_first() -> None:
    for seed in range(20):
        parts = units(["grep", "-r", "-m", "5", "x", "-i", "/etc", "/root", "--", "-v"])
        again = reordered("grep", parts, Random(seed))
        assert sorted(map(tuple, again)) == sorted(map(tuple, parts))
        assert [u for u in again if not _is_option(u)][:3] == [["x"], ["/etc"], ["/root"]] and again[-2:] == [["--"], ["-v"]]
        assert reordered("nvidia-smi", units(["nvidia-smi", "nvlink", "-i", "0", "-r", "0"]), Random(seed))[0] == ["nvlink"]


def test_a_valued_option_split_from_its_value_is_an_invalid_command_not_a_recursive_one() -> None:
    """What the property once drew: grep refuses ``-d /proc/1/environ`` and ``-d x``, so nothing recurses (ask, not
    deny); kept together, ``-d recurse`` is recursive wherever it stands."""
    for argv in (["grep", "-d", "/proc/1/environ", "recurse", "x", "/etc"], ["grep", "-d", "x", "recurse", "/etc"]):
        assert vet_argv(argv, MODEL_HOST).decision == "ask", argv
    for argv in (["grep", "/etc", "-d", "recurse", "x"], ["grep", "x", "/proc/1/environ", "/etc", "-d", "recurse"]):
        assert vet_argv(argv, MODEL_HOST).decision == "deny", argv
    assert vet_argv(["grep", "-d", "skip", "-i", "nvrm", "/var/log/kern.log"], MODEL_HOST).decision == "allow"


def test_the_issue_s_examples_stay_denied_with_an_environ_read_appended() -> None:
    for command in ("rm -rf X", "bash -c reboot", "nvidia-smi -r", "sudo cat /etc/hostname"):
        for argv in (
            [*shlex.split(command), "/proc/1/environ"],
            [shlex.split(command)[0], "/proc/1/environ", *shlex.split(command)[1:]],
        ):
            verdict = vet_argv(argv, MODEL_HOST)
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


@given(spelled_twice())
def test_every_spelling_of_the_same_options_is_vetted_alike(pair: tuple[list[str], list[str]]) -> None:
    first, second = (vet_argv(argv, MODEL_HOST) for argv in pair)
    assert first.decision == second.decision, (pair, first, second)


def test_lspci_x_counts_however_it_is_spelt() -> None:
    for argv in (
        ["lspci", "-x", "-x", "-x", "-x"],
        ["lspci", "-xxxx"],
        ["lspci", "-xx", "-x", "-s", "03:00.0", "-x"],
        ["lspci", "-vxx", "-x"],
    ):
        assert vet_argv(argv, MODEL_HOST).rule == "lspci-risky-read", argv
    for argv in (["lspci", "-x", "-x"], ["lspci", "-xx"], ["lspci", "-x", "-s", "03:00.0", "-x"]):
        assert vet_argv(argv, MODEL_HOST).decision == "allow", argv


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


@given(st.sampled_from(READ_LINES), st.sampled_from(SELF_LINKS))
def test_a_path_through_the_commands_own_root_or_cwd_is_vetted_like_its_target(argv: list[str], link: str) -> None:
    """Commands run in rigaudit's root with / as their working directory: /proc/self/root and cwd lead to /."""
    direct = vet_argv(argv, MODEL_HOST)
    through = vet_argv([argv[0], link + argv[1]], MODEL_HOST)
    assert through.decision == direct.decision, (argv, link, direct, through)


@given(st.sampled_from(READ_LINES), st.sampled_from(FOREIGN_LINKS))
def test_a_path_through_another_process_s_root_cwd_or_open_file_is_denied(argv: list[str], link: str) -> None:
    verdict = vet_argv([argv[0], link + argv[1]], MODEL_HOST)
    assert verdict.decision == "deny", (argv, link, verdict)
