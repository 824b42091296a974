"""tools/redact: a long text redacted again (the same host audited twice in one process, a fleet's shared files) is
redacted once; what it counted is counted each time, and its digests follow the identifiers learned since."""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import REDACTED, Tally, _ids, _json, _text, as_digest, digest_ids, redact_json, redact_text
from rigaudit.tools.redact._memo import TextMemo

_FILLER = "".join(f"cpu MHz\t\t: {2400 + i}.000\nflags\t\t: fpu vme pat pse\n" for i in range(40))


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    calls: list[str] = []
    original = getattr(module, name)

    def counted(text: str, *args: object, **kwargs: object) -> object:
        calls.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_long_text_is_redacted_once_and_counted_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, _text, "_redact")
    text = _FILLER + "export DB_PASSWORD=hunter2xyz\n" + _FILLER
    tallies = [Tally(), Tally()]
    outs = [redact_text(text, tallies[0]), redact_text(text, tallies[1])]
    assert outs[0] == outs[1] and f"DB_PASSWORD={REDACTED}" in outs[0] and "hunter2xyz" not in outs[0]
    assert tallies[0] == tallies[1] and tallies[0].total() == 1
    assert len([c for c in calls if c == text]) == 1


def test_an_unchanged_long_text_comes_back_as_the_object_given() -> None:
    first, again = _FILLER + "x\n", "".join([_FILLER, "x\n"])
    assert first == again and first is not again
    assert redact_text(first) is first and redact_text(again) is again
    assert digest_ids(first, content=True) is first and digest_ids(again, content=True) is again


def test_a_long_text_is_digested_again_knowing_a_value_learned_since(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, _ids, "_digest")
    serial = "PXR4410071234"
    text = _FILLER + f"slot {serial} ready\n" + _FILLER
    assert digest_ids(text, content=True) == text  # nothing says it is a serial yet
    assert digest_ids(text, content=True) == text and len(calls) == 1
    token = as_digest("serial", serial)
    assert token is not None
    digested = digest_ids(text, content=True)
    assert serial not in digested and token in digested and len(calls) == 2


def test_a_digest_counts_its_identifiers_each_time() -> None:
    text = _FILLER + "GPU UUID: GPU-5a1c0000-7e2d-4c1b-9f0a-3b8e0d6c0000\n"
    tallies = [Tally(), Tally()]
    outs = [digest_ids(text, content=True, tally=t) for t in tallies]
    assert outs[0] == outs[1] and "GPU-5a1c" not in outs[0]
    assert tallies[0]["identifier"] == tallies[1]["identifier"] == 1


def test_the_memo_keeps_at_most_its_bound_the_oldest_going_first() -> None:
    memo = TextMemo(most_chars=25)
    done: list[str] = []

    def redact(text: str) -> str:
        done.append(text)
        return text.upper()

    for text in ("a" * 10, "b" * 10, "c" * 10, "a" * 10, "c" * 10, "d" * 30):
        assert memo.run((text,), lambda counted, t=text: redact(t), None) == text.upper()
    assert done == ["a" * 10, "b" * 10, "c" * 10, "a" * 10, "d" * 30]  # "a" went first; "d" is longer than the bound


def test_a_string_met_again_in_the_json_walk_is_redacted_once_and_counted_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, _json, "redact_text")
    secret = "export API_TOKEN=hunter2xyz9"
    tallies = [Tally(), Tally()]
    outs = [redact_json({"op": "run", "result": {"line": secret}, "again": [secret, 1]}, t, ids=True) for t in tallies]
    assert outs[0] == outs[1] and f"API_TOKEN={REDACTED}" in outs[0]["result"]["line"]
    assert tallies[0] == tallies[1] and tallies[0]["credential"] == 2
    assert calls.count(secret) == 1


def test_a_string_is_walked_again_knowing_a_value_learned_since() -> None:
    event = {"target": "/dev/disk/by-id/nvme-PXR4410071234", "note": "slot PXR4410071234"}
    assert redact_json(event, ids=True) == event
    token = as_digest("serial", "PXR4410071234")
    assert token is not None and redact_json(event, ids=True)["note"] == f"slot {token}"
