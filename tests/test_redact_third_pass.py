"""Secret forms the third attack review planted (docs/validation/attack-review.md, "Third pass")."""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import REDACTED, Tally, redact_text


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


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("[  103.0] app: GET /login?sessionid=k3j9v8q2m1x7c4b6n5z0a8s7 200\n", "k3j9v8q2m1x7c4b6n5z0a8s7"),
        ("Set: JSESSIONID=node01a2b3c4d5e6f7g8h9; Path=/\n", "node01a2b3c4d5e6f7g8h9"),
        ("php: PHPSESSID=q1w2e3r4t5y6u7i8o9p0 expired\n", "q1w2e3r4t5y6u7i8o9p0"),
    ],
)
def test_a_session_id_is_redacted(line: str, secret: str) -> None:
    assert secret not in redact_text(line)


@pytest.mark.parametrize(
    ("line", "secret", "kept"),
    [
        ("[  106.0] snmpd: rocommunity onyxLark48p 10.0.0.0/8\n", "onyxLark48p", "10.0.0.0/8"),
        ("rwcommunity6 tealWren33b\n", "tealWren33b", "rwcommunity6"),
        ("[  104.0] haproxy: stats auth admin:rubyFalcon26h\n", "rubyFalcon26h", "stats auth"),
    ],
)
def test_snmp_communities_and_haproxy_stats_credentials_are_redacted(line: str, secret: str, kept: str) -> None:
    out = redact_text(line)
    assert secret not in out and kept in out


def test_a_cookie_header_whose_session_id_was_redacted_is_counted_once() -> None:
    tally = Tally()
    out = redact_text("app[999]: Cookie: sessionid=2XCciqCUOoZgemEM8SgrMvM6; theme=dark\n", tally)
    assert "2XCciq" not in out and out.count(REDACTED) == tally.total() == 1


@pytest.mark.parametrize(
    ("argv", "secret", "kept"),
    [
        (["htpasswd", "-b", "/etc/nginx/.htpasswd", "ops", "tealOtter42q"], "tealOtter42q", "ops"),
        (["htpasswd", "-nbB", "ops", "tealOtter42q"], "tealOtter42q", "ops"),
        (["mc", "alias", "set", "minio", "http://10.0.0.5:9000", "minioadmin", "plumGecko88w"], "plumGecko88w", "minioadmin"),
        (["mc", "config", "host", "add", "s3", "https://s3.example", "AKIA1", "plumGecko88w"], "plumGecko88w", "s3"),
    ],
)
def test_a_password_given_as_a_plain_argument_is_redacted_where_the_program_puts_it(
    argv: list[str], secret: str, kept: str
) -> None:
    """Programs that take the secret as an argument at a fixed place, in every form of their command line."""
    for text in (" ".join(argv) + "\n", f"   PID COMMAND\n  4002 {' '.join(argv)}\n", "\n".join(argv) + "\n"):
        out = redact_text(text)
        assert secret not in out and kept in out, out


def test_plain_arguments_of_those_programs_elsewhere_are_kept() -> None:
    for line in ("htpasswd -c /etc/nginx/.htpasswd ops\n", "mc ls minio/models/llama-70b\n", "mc cp a.bin minio/x/y\n"):
        assert REDACTED not in redact_text(line), line
