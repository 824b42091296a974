"""Every output flag of every command: one rule (tools/files/outputs.py), checked before any work, one line, exit 2."""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator import cli
from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.commands._outputs import every_output, flag_of
from rigaudit.tools.files.outputs import Kind

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"
OUTPUT_WORDS = ("json", "report", "out", "output", "prometheus", "into", "transcript", "save", "keep", "journal", "script")
"""What an output flag's dest is named after; a flag so named that reads (``checks --json``) takes no value."""


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return cli.build_parser()


def _outputs() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [(where, a) for where, a in every_output(_parser()) if flag_of(a) is not None]


def test_every_flag_named_as_an_output_is_declared_one() -> None:
    undeclared = [
        f"{' '.join(where)} {a.option_strings[-1]}"
        for where, a in every_output(_parser())
        if a.option_strings
        and set(a.dest.split("_")) & set(OUTPUT_WORDS)
        and a.nargs != 0
        and not a.dest.startswith("no_")
        and flag_of(a) is None
    ]
    assert undeclared == []
    assert len(_outputs()) >= 55  # --transcript of every command, --json, --report, --into, --out, --keep...


def _argv(where: tuple[str, ...], action: argparse.Action, value: str) -> list[str]:
    """The command's argv with ``action`` set to ``value`` and every positional it needs filled in."""
    parser = _parser()
    for name in where:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    positional = [
        "x" for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction) and a.nargs != "?"
    ]
    for group in parser._mutually_exclusive_groups:  # snapshot: -o or --stdout
        if group.required and action.dest not in [a.dest for a in group._group_actions]:
            other = next(a for a in group._group_actions if a.nargs == 0)
            positional.append(other.option_strings[-1])
    return [*where, action.option_strings[-1], value, *positional]


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every command's run replaced by one that records it was reached."""
    reached: list[str] = []
    build = cli.build_parser

    def built(only: object = None) -> argparse.ArgumentParser:
        parser = build(only)  # type: ignore[arg-type]
        for where, _ in every_output(parser):
            child = parser
            for name in where:
                child = next(a for a in child._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
            child.set_defaults(_run=lambda args: reached.append(args.command) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", built)
    yield reached


def _bad_paths(tmp_path: Path, kind: Kind) -> list[tuple[str, str]]:
    """Paths every output flag refuses, with what the line says."""
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    shared.chmod(0o777)  # others may write here: a link in it may be theirs
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    if not (shared / "link").is_symlink():
        (shared / "link").symlink_to(tmp_path / "elsewhere")
    full = tmp_path / "full"
    full.mkdir(exist_ok=True)
    (full / "a").write_text("")
    cases = [
        ("/proc/rigaudit-nope/x", "/proc is the kernel's"),
        ("/sys/kernel/x", "/sys is the kernel's"),
        ("/proc/version", "/proc is the kernel's"),
        (str(shared / "link" / "x"), "others may write"),
        (str(full / "a" / "x"), "is not a directory"),
    ]
    if kind is Kind.FILE:
        cases.append((str(full), "is a directory; give a file name"))
    else:
        cases.append((str(full / "a"), "not a directory"))
    if kind is Kind.NEW_FOLDER:
        cases.append((str(full), "exists and is not empty"))
    return cases


def test_every_output_flag_refuses_a_bad_path_before_any_work(
    tmp_path: Path, no_work: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tried = 0
    for where, action in _outputs():
        flag = flag_of(action)
        assert flag is not None
        kind = flag.kind if isinstance(flag.kind, Kind) else Kind.NEW_FOLDER  # snapshot -o: a folder unless --share
        for value, said in _bad_paths(tmp_path, kind):
            argv = _argv(where, action, value)
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and said in err[0] and action.option_strings[-1] in err[0], (argv, err)
            tried += 1
    assert no_work == [] and tried >= 6 * 55
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_audit_with_an_unwritable_report_is_refused_before_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The examples of issue 34: each used to run the whole audit first (two of them ending in a traceback)."""
    full = tmp_path / "full"
    full.mkdir()
    (full / "kept").write_text("")
    for argv, said in [
        (["audit", "--snapshot", str(H200), "--report", "/proc/nope/x.md"], "--report /proc/nope/x.md: /proc is the kernel's"),
        (["audit", "--snapshot", str(H200), "--report", "/sys/kernel/x.md"], "/sys is the kernel's"),
        (["audit", "--snapshot", str(H200), "--json", "/proc/version"], "--json /proc/version: /proc is the kernel's"),
        (["apply", "--demo", "--into", str(full), "--yes"], f"--into {full}: exists and is not empty"),
    ]:
        assert main([*argv, "--no-live", "--no-transcript"]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1 and said in out.err, out


def test_missing_folders_are_made_alike_by_audit_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit_json, check_json = tmp_path / "a" / "b" / "audit.json", tmp_path / "c" / "d" / "check.json"
    assert main(["audit", "--snapshot", str(H200), "--no-live", "--no-transcript", "--json", str(audit_json)]) == 0
    assert main(["check", "--snapshot", str(H200), "-q", "--json", str(check_json)]) == 0
    assert audit_json.is_file() and check_json.is_file()
    capsys.readouterr()


def test_a_link_on_the_way_is_followed_only_where_no_one_else_could_have_made_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "metrics"
    target.mkdir()
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    (mine / "textfile").symlink_to(target)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "own").symlink_to(target)
    (sticky / "theirs").symlink_to(target)
    os.lchown(sticky / "theirs", 65534, 65534)  # made by another user, in a folder everyone may write
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o775)
    os.chown(shared, os.geteuid(), 65534)  # a group of others may write here
    (shared / "textfile").symlink_to(target)
    for folder, code in [(mine / "textfile", 0), (sticky / "own", 0), (sticky / "theirs", 2), (shared / "textfile", 2)]:
        out = folder / "rigaudit.prom"
        assert main(["check", "--snapshot", str(H200), "-q", "--prometheus", str(out)]) == code, folder
        err = capsys.readouterr().err
        if code == 2:
            assert err.count("\n") == 1 and f"the link {folder} " in err and "not followed" in err, err
    assert [p.name for p in target.iterdir()] == ["rigaudit.prom"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``--results`` folder of one node's ``check --json`` result (gpu-01)."""
    folder = tmp_path_factory.mktemp("results")
    one = folder / "one.json"
    assert main(["check", "--snapshot", str(H200), "-q", "--json", str(one)]) == 0
    doc = json.loads(one.read_text())
    doc["host"] = doc["audit"]["host"]["name"] = "gpu-01"
    one.write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("planted", ["hosts", "hosts/gpu-01"])
def test_a_link_planted_in_a_fleet_output_folder_is_not_followed(
    planted: str, results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    if planted != "hosts":
        (out / "hosts").mkdir()
    (out / planted).symlink_to(elsewhere)  # O/hosts or O/hosts/gpu-01 leads elsewhere
    assert main(["audit", "--results", str(results), "--out", str(out), "--no-live", "--no-transcript"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out / planted}: is a link or not a directory: not followed" in err, err
    assert list(elsewhere.iterdir()) == []


def test_a_link_planted_as_a_node_file_is_not_followed(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim"
    (out / "hosts" / "gpu-01").mkdir(parents=True)
    victim.write_text("keep\n")
    (out / "hosts" / "gpu-01" / "audit.json").symlink_to(victim)
    assert main(["audit", "--results", str(results), "--out", str(out), "--no-live", "--no-transcript"]) == 2
    assert "audit.json: is a link or not a regular file: not followed" in capsys.readouterr().err
    assert victim.read_text() == "keep\n"


def test_a_node_folder_others_may_write_is_refused(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    (out / "hosts" / "gpu-01").mkdir(parents=True)
    (out / "hosts").chmod(0o777)
    assert main(["audit", "--results", str(results), "--out", str(out), "--no-live", "--no-transcript"]) == 2
    assert f"{out / 'hosts'}: others may write in it" in capsys.readouterr().err
