"""How many values were redacted, by kind (the share bundle's manifest reports them)."""

from __future__ import annotations

from collections import Counter

KIND_LABELS: dict[str, str] = {
    "credential": "values of secret-named variables, flags, keys and headers",
    "environment": "environment values no check reads (the name is kept)",
    "token": "API keys and tokens recognised by their format (cloud keys, service tokens, JWTs)",
    "url_userinfo": "user and password parts of URLs and DSNs",
    "bearer": "Bearer, Basic and other authorization credentials",
    "private_key": "private key blocks (PEM, OpenSSH, PGP)",
    "password_hash": "password hashes",
    "webhook": "webhook URL paths",
    "random": "other long random strings",
    "binary": "values masked inside binary or compressed files (no marker: their bytes are overwritten or packed)",
    "identifier": "machine ids, boot ids, UUIDs, serial numbers and hardware addresses written as digests",
}


class Tally(Counter[str]):
    """kind -> values redacted; ``tally.add(kind)`` counts one, ``tally.total()`` all."""

    def add(self, kind: str, n: int = 1) -> None:
        self[kind] += n
