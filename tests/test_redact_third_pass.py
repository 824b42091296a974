"""Secret forms the third attack review planted (docs/validation/attack-review.md, "Third pass")."""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import redact_text


@pytest.mark.parametrize(
    ("line", "secret", "kept"),
    [
        ("[  101.000000] redis[812]: requirepass pearlMarten71f\n", "pearlMarten71f", "requirepass"),
        ("# masterauth coralViper35n\n", "coralViper35n", "masterauth"),
        ('cfg: requirepass "jade Badger27t" loaded\n', "Badger27t", "loaded"),
    ],
)
def test_a_redis_password_directive_inside_a_line_is_redacted(line: str, secret: str, kept: str) -> None:
    out = redact_text(line)
    assert secret not in out and kept in out


@pytest.mark.parametrize(
    "line",
    [
        'network={\n ssid="corp"\n psk="fernPlover57a"\n}\n',
        '[  102.000000] wpa_supplicant: psk="fernPlover57a"\n',
        "WIFI_PSK=fernPlover57a\n",
    ],
)
def test_a_wifi_pre_shared_key_is_redacted(line: str) -> None:
    out = redact_text(line)
    assert "fernPlover57a" not in out and "psk" in out.lower()


@pytest.mark.parametrize(
    ("argv", "secret"),
    [
        (["ldapsearch", "-x", "-D", "cn=admin,dc=corp", "-w", "cobaltFinch19z", "-b", "dc=corp"], "cobaltFinch19z"),
        (["ldapmodify", "-D", "cn=admin", "-wcobaltFinch19z"], "cobaltFinch19z"),
        (["smbclient", "//nas/models", "-U", "svc%amberHeron55k"], "amberHeron55k"),
    ],
)
def test_a_program_s_password_flag_is_redacted_in_every_form_of_its_command_line(argv: list[str], secret: str) -> None:
    """As an argv, a ``ps`` line, and one word a line (``strings /proc/PID/cmdline``: the program on a line of its own)."""
    for text in (" ".join(argv) + "\n", f"   PID COMMAND\n  4002 {' '.join(argv)}\n", "\n".join(argv) + "\n"):
        assert secret not in redact_text(text), text
