"""A URL's query names its credentials: ``?pwd=`` is a password there, ``&key=1a2b3c4d`` a key.

Outside a query the same names are not secrets (``PWD`` is the working folder, a sysctl action's ``key``) and
a weak name keeps numbers and short hex (``microcode: sig=0x806f8``); inside one, every value but an empty one
or a boolean is the credential. The fourth attack review found ``pwd=`` in a URL's query reaching every output.
"""

from __future__ import annotations

import pytest

from rigaudit.tools.redact import REDACTED, redact_argv, redact_bytes, redact_json, redact_text

PLANTED = [
    ("https://db.example/login?user=bob&pwd=hunter2", "hunter2"),
    ("https://maps.example/api?key=1a2b3c4d&z=3", "1a2b3c4d"),
    ("https://h.example/v?otp=482913&page=2", "482913"),
    ("https://s3.example/o?sig=0x5e1f&x=1", "0x5e1f"),
    ("http://h.example/?db.password=12345", "12345"),
]

KEPT = [
    "cd /srv/app && PWD=/home/alice make",
    "https://store.example/get?key=models/llama/config.json",
    "microcode: sig=0x806f8, pf=0x10, revision=0x2b000603",
    "https://h.example/v?page=2&debug=true&pwd=",
    "sleep 5 & key=3",
]


@pytest.mark.parametrize(("url", "secret"), PLANTED)
def test_a_credential_in_a_query_reaches_no_output(url: str, secret: str) -> None:
    line = f"GET {url} 200"
    outputs = [
        redact_text(line),
        " ".join(redact_argv(["curl", "-s", url])),
        str(redact_json({"url": url})),
        redact_bytes(line.encode(), "/var/log/nginx/access.log").decode(),
    ]
    for output in outputs:
        assert secret not in output
        assert REDACTED in output
        assert url.split("?", maxsplit=1)[0] in output  # the address itself is kept


@pytest.mark.parametrize("line", KEPT)
def test_the_same_names_outside_a_query_or_holding_no_secret_are_kept(line: str) -> None:
    assert redact_text(line) == line
