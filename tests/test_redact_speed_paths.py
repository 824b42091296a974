"""tools/redact: the faster paths (a line redacted once per text, literal searches before patterns) give what the
patterns give: the same hints, every repeated line redacted and counted."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from rigaudit.tools.redact import REDACTED, Tally, digest_ids, redact_text
from rigaudit.tools.redact._ids import _LABEL_HINT, _SHAPE_HINT, _label_hint, _shape_hint
from rigaudit.tools.redact._spaced import _DIRECTIVE, _DIRECTIVE_HINT
from rigaudit.tools.redact._text import _entries

_PIECES = st.sampled_from(
    [
        *("0", "9", "a", "F", "e4", "c2", ":", "-", " ", "\n", "x", "z", "GPU", "mig", "gPu", "Serial", "UUID", "mAchine"),
        *("BOOT", "asset", "ſerial", "İ", "K", "requirepass", "MasterAuth", "rocommunity", "STATS auth", "ſ", "\u212a"),
        *("e4:c2:", "00a1:b2c4:", "GPU-", "MiG-", "deadbeef", "DEADBEEF-", "ab:", "1234:"),
    ]
)
_TEXT = st.lists(_PIECES, max_size=40).map("".join)


@given(_TEXT)
def test_the_label_hint_is_the_patterns(text: str) -> None:
    assert _label_hint(text) == (_LABEL_HINT.search(text) is not None)


@given(_TEXT)
def test_the_shape_hint_is_the_patterns(text: str) -> None:
    assert _shape_hint(text) == (_SHAPE_HINT.search(text) is not None)


@given(_TEXT)
def test_a_text_without_a_directive_word_is_left_to_no_directive(text: str) -> None:
    if text.isascii() and not any(h in text.lower() for h in _DIRECTIVE_HINT):
        assert _DIRECTIVE.search(text) is None
    assert _entries(text, None) == _entries(text, None)


def test_a_repeated_secret_line_is_redacted_and_counted_each_time() -> None:
    line = "export DB_PASSWORD=hunter2xyz\n"
    tally = Tally()
    out = redact_text(line * 3 + "flags : fpu pat pse\n" * 40, tally)
    assert out.count(f"DB_PASSWORD={REDACTED}") == 3 and "hunter2" not in out
    assert tally.total() == 3


def test_a_repeated_command_line_is_redacted_and_counted_each_time() -> None:
    ps = "  101 root  curl -u admin:hunter2 https://example.com/x\n"
    tally = Tally()
    out = redact_text(ps * 4 + "  102 root  sleep 60\n" * 30, tally)
    assert out.count(f"admin:{REDACTED}") == 4 and "hunter2" not in out
    assert tally.total() == 4


def test_single_word_lines_are_still_one_command_after_a_repeated_line() -> None:
    text = "a b\na b\nsshpass\n-p\nsecretpw\na b\n"
    out = redact_text(text)
    assert "secretpw" not in out and out.count("a b\n") == 3


def test_a_short_file_is_digested_by_what_its_path_says_whatever_was_read_before() -> None:
    value = "4c4c4544004a3010804bc4c04f575432\n"
    assert digest_ids(value, path="/sys/class/net/eth0/mtu", content=True) != value  # a lone 32-hex id
    assert digest_ids("1500\n", path="/sys/class/net/eth0/mtu", content=True) == "1500\n"
    serial = "PXR4410071234\n"
    assert digest_ids(serial, path="/sys/class/net/eth0/address_len", content=True) == serial
    dmi = digest_ids(serial, path="/sys/class/dmi/id/board_serial", content=True)
    assert dmi.startswith("serial:") and digest_ids(serial, path="/sys/class/dmi/id/chassis_serial", content=True) == dmi


def test_a_short_file_counts_its_identifiers_each_time() -> None:
    tally = Tally()
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        digest_ids("4c4c4544004a3010804bc4c04f575432\n", path=path, content=True, tally=tally)
    assert tally["identifier"] == 2


def test_a_repeated_base64_line_is_digested_each_time() -> None:
    encoded = base64.b64encode(b"machine_id=4c4c4544004a3010804bc4c04f575432\n").decode()
    out = digest_ids("GenuineIntel cpu family\n" * 5 + f"got {encoded} back\n" * 3, content=True)
    assert encoded not in out and out.count("got ") == 3 and out.count("GenuineIntel cpu family\n") == 5


def test_lines_after_a_character_that_lower_casing_widens_are_still_redacted() -> None:
    text = "\u0130\u0130\u0130 x\nexport DB_PASSWORD=hunter2xyz\nexport DB_PASSWORD=hunter2xyz\n"
    assert "hunter2" not in redact_text(text)
