"""Whether the value written beside a name is a secret: judged by the name, then by what the value is.

* a boolean (``yes``, ``off``, ``null``) is never a secret: ``PasswordAuthentication no`` is a setting;
* a number is kept when the name is a setting about a credential rather than the credential itself (its last
  word is not a credential word: ``password_min_length: 12``, ``token_budget``), or the name is weak;
* a weak name (:func:`._names.secret_strength`) keeps hex literals too; in prose (``loose``) any hex id;
* the bare name ``key`` (a sysctl action's ``"key": "vm.swappiness"``, a dictionary's key) is a secret only when
  its value is key material: 16 hex digits or more, base64, or a random string (``"key": "3f9a..."``);
* in a URL's query (:func:`query_secret`) a credential name names the credential itself, whatever its value looks
  like: ``?pwd=`` is a password there, not the working folder, and ``&key=1a2b3c4d`` or ``&otp=123456`` are keys.
"""

from __future__ import annotations

import re

from rigaudit.tools.redact._names import names_credential, secret_strength
from rigaudit.tools.redact._shapes import REDACTED, looks_random

_BOOLEAN = re.compile(r"[\"']?(?:true|false|yes|no|on|off|none|null|nil|\*+)[\"']?", re.I)
_SCALAR = re.compile(r"[\"']?(?:-?\d+(?:\.\d+)?|0x[0-9A-Fa-f]+)[\"']?")
_HEX = re.compile(r"[0-9A-Fa-f:-]+")
_KEY_NAMES = frozenset({"key", "-k", "--key"})
_QUERY_NAMES = frozenset({"pwd", "key"})
"""Names that are no secret elsewhere (the working folder, a dictionary's key) but are one in a URL's query."""
_HEX_KEY = re.compile(r"(?:0x)?[0-9A-Fa-f]{16,}")
_BASE64_KEY = re.compile(r"(?=[^=]*[0-9+/])[A-Za-z0-9+/]{14,}(?:==|=)|(?=\S*[a-z])(?=\S*[A-Z])(?=\S*[0-9])[A-Za-z0-9+/]{16,}")


def key_material(value: str) -> bool:
    """Whether ``value`` is what a key is written as: long hex, base64, or random (not a name, path or id)."""
    bare = value.strip().strip("\"'")
    return bool(_HEX_KEY.fullmatch(bare) or _BASE64_KEY.fullmatch(bare) or looks_random(bare))


def secret_value(name: str, value: str, *, loose: bool = False) -> bool:
    """Whether ``value`` of ``name`` is to be redacted (``loose``: a ``name: value`` inside prose or a log line)."""
    if not value or REDACTED in value:
        return False
    strength = secret_strength(name)
    bare = value.strip()
    if strength == 0:
        return not loose and name.strip().lower() in _KEY_NAMES and key_material(bare)
    if _BOOLEAN.fullmatch(bare):
        return False
    scalar = _SCALAR.fullmatch(bare) is not None
    if strength == 2:
        return not scalar or names_credential(name)
    return not scalar and not (loose and _HEX.fullmatch(bare))


def query_secret(name: str, value: str) -> bool:
    """Whether ``value`` of ``name`` in a URL's query (``?pwd=...``, ``&key=...``) is to be redacted.

    There a credential name is the credential (``pwd``, ``key``, ``sig``, ``otp``, ``db.password``): every value
    but an empty one or a boolean is redacted, numbers and short hex included. A ``key`` holding a path
    (``?key=models/llama/config.json``, an object store's key) is kept.
    """
    bare = value.strip().strip("\"'")
    if secret_value(name, bare):
        return True
    if not bare or REDACTED in bare or _BOOLEAN.fullmatch(bare):
        return False
    lowered = name.strip().lower()
    if lowered in _QUERY_NAMES:
        return not (lowered == "key" and "/" in bare)
    return secret_strength(name) > 0 and names_credential(name)
