"""Values that are secrets by their shape, wherever they are written: known token formats, JWTs,
PEM private keys, URL userinfo, ``Bearer``/``Basic`` credentials, password hashes, and long random
strings (:func:`looks_random`).

Each rule names its kind (what a tally counts) and replaces only the secret part of its match.
"""

from __future__ import annotations

import itertools
import math
import re

from rigaudit.tools.core.record import Record

REDACTED = "<redacted>"


class Shape(Record):
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    """The part of a match that is secret (the rest is kept)."""
    hint: tuple[str, ...] = ()
    """Lower-case strings one of which every match holds: text without any is not searched."""


def _shape(kind: str, pattern: str, group: int | str = 0, hint: tuple[str, ...] = ()) -> Shape:
    return Shape(kind, re.compile(pattern), group, hint)


PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----(?P<body>.*?)(?:-----END [A-Z0-9 ]*-----|\Z)",
    re.DOTALL,
)
"""A private key block (RSA, EC, OPENSSH, ENCRYPTED, PGP), also written on one line with ``\\n`` escapes."""

_TOKEN_FORMATS = "|".join(
    (
        r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",  # AWS access key ids
        r"AIza[0-9A-Za-z_-]{35}",  # Google API key
        r"ya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
        r"1//0[0-9A-Za-z_-]{30,}",  # Google OAuth refresh token
        r"GOCSPX-[0-9A-Za-z_-]{20,}",  # Google OAuth client secret
        r"[0-9A-Za-z_~.-]{3}\dQ~[0-9A-Za-z_~.-]{31,34}",  # Azure AD client secret
        r"(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{30,}",  # GitHub
        r"github_pat_[0-9A-Za-z_]{22,}",
        r"gl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat|agent)-[0-9A-Za-z_-]{20,}",  # GitLab
        r"GR1348941[0-9A-Za-z_-]{20,}",
        r"xox[abposre]-[0-9A-Za-z-]{10,}",  # Slack
        r"xapp-\d-[0-9A-Za-z-]{10,}",
        r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
        r"whsec_[0-9A-Za-z]{20,}",
        r"hf_[0-9A-Za-z]{30,}",  # Hugging Face
        r"api_org_[0-9A-Za-z]{30,}",
        r"sk-(?:ant-|proj-|svcacct-|admin-)?[0-9A-Za-z_-]{20,}",  # OpenAI, Anthropic
        r"npm_[0-9A-Za-z]{36}",  # npm
        r"pypi-AgE[0-9A-Za-z_-]{20,}",  # PyPI
        r"dckr_(?:pat|oat)_[0-9A-Za-z_-]{20,}",  # Docker Hub
        r"SK[0-9a-f]{32}",  # Twilio API key
        r"SG\.[0-9A-Za-z_-]{16,}\.[0-9A-Za-z_-]{16,}",  # SendGrid
        r"key-[0-9a-f]{32}",  # Mailgun
        r"[0-9a-f]{32}-us\d{1,2}",  # Mailchimp
        r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}",  # Shopify
        r"do[opr]_v1_[0-9a-f]{64}",  # DigitalOcean
        r"dapi[0-9a-f]{32}(?:-\d)?",  # Databricks
        r"hv[sbr]\.[0-9A-Za-z_-]{24,}",  # HashiCorp Vault
        r"glc_[0-9A-Za-z+/]{32,}={0,2}",  # Grafana
        r"glsa_[0-9A-Za-z]{32}_[0-9A-Fa-f]{8}",
        r"NRAK-[0-9A-Z]{27}",  # New Relic
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",  # age
        r"sntry[su]_[0-9A-Za-z_=+/-]{30,}",  # Sentry auth tokens
        r"nvapi-[0-9A-Za-z_-]{40,}",  # NVIDIA NGC
        r"lin_api_[0-9A-Za-z]{40}",  # Linear
        r"gsk_[0-9A-Za-z]{40,}",  # Groq
        r"r8_[0-9A-Za-z]{37}",  # Replicate
        r"pplx-[0-9A-Za-z]{40,}",  # Perplexity
        r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}",  # Postman
        r"ATATT3[0-9A-Za-z_=-]{100,}",  # Atlassian
        r"(?:secret|ntn)_[0-9A-Za-z]{43,}",  # Notion
        r"\d{8,10}:AA[0-9A-Za-z_-]{33}",  # Telegram bot
        r"eyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}",  # JWT (signed)
        r"eyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.?",  # JWT (unsigned)
    )
)
SHAPES: tuple[Shape, ...] = (
    _shape("token", rf"(?<![0-9A-Za-z_-])(?:{_TOKEN_FORMATS})(?![0-9A-Za-z])"),
    _shape(
        "webhook",
        r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)|(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks"
        r"|[0-9A-Za-z-]+\.webhook\.office\.com/webhookb2|outlook\.office\.com/webhook|chat\.googleapis\.com/v1/spaces)"
        r"(?P<path>/[^\s\"'<>]+)",
        "path",
        ("://",),
    ),
    _shape(
        "url_userinfo",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<info>[^\s/?#\"'<>]+)@(?=[\w\[.-]+(?:[:/?#\s\"'<>,;]|$))",
        "info",
        ("://",),
    ),
    _shape(
        "bearer",
        r"(?i)\b(?:Bearer|Basic|Token|Digest|Negotiate|ApiKey|AWS4-HMAC-SHA256)[ \t]+(?!<redacted>)"
        r"(?P<cred>[0-9A-Za-z._~+/=:,-]{8,})",
        "cred",
        ("bearer", "basic", "token", "digest", "negotiate", "apikey", "aws4-hmac"),
    ),
    _shape(
        "password_hash",
        r"(?:(?<![\w$])\$(?:1|2[abxy]?|5|6|7|y|gy|apr1|argon2(?:id|i|d)|scrypt)\$|\{(?:SSHA|SHA|SMD5|MD5|CRYPT)\})"
        r"(?P<hash>[^:\s\"']{8,})",
        "hash",
        ("$", "{"),
    ),
    _shape("token", r"\bwandb\s+login\s+(?:--?[a-z-]+\s+)*(?P<key>[0-9a-f]{40})\b", "key", ("wandb",)),
    _shape("password_hash", r"grub\.pbkdf2\.sha512\.\d+\.(?P<hash>[0-9A-Fa-f]+(?:\.[0-9A-Fa-f]+)?)", "hash", ("grub.pbkdf2",)),
)

_CANDIDATE = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_HASH_CONTEXT = re.compile(
    r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|digest|integrity|checksum|hash|fingerprint)[=:\s-]*$"
)
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_HEX_RUN = re.compile(r"[0-9a-fA-F]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_VOWELS = re.compile(r"[aeiouyAEIOUY]")


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _class(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


def looks_random(value: str) -> bool:
    """A long random string: mixed letters and digits with high entropy, not a hex id, hash, path or words.

    Hex strings (UUIDs, ids, hashes) and words joined by ``-``, ``_`` or ``/`` (model names, paths)
    are not random; ``AKx9mQ2vL7pZr4Tn8Wd1`` is.
    """
    core = value.rstrip("=")
    if len(core) < 20 or core.startswith(("/", "-", "_")):
        return False
    if re.fullmatch(r"[0-9a-fA-F_-]+", core):
        return False
    runs = _ALNUM_RUN.findall(core)
    if not any(len(run) >= 14 and not _HEX_RUN.fullmatch(run) for run in runs):
        return False  # words, paths, or hex ids joined by separators
    letters = "".join(runs)
    has_upper, has_lower = any(c.isupper() for c in letters), any(c.islower() for c in letters)
    digits = sum(c.isdigit() for c in letters)
    changes = sum(_class(a) != _class(b) for a, b in itertools.pairwise(letters))
    wordy = sum(len(w) for w in _CAMEL.findall(letters) if len(w) >= 3 and _VOWELS.search(w))
    if not (has_lower and digits >= 2 and (has_upper or len(letters) >= 32)) and not (has_upper and has_lower and digits):
        return _random_letters(letters, changes, wordy)
    if changes < len(letters) * 0.3 or _entropy(core) < 3.7:
        return False
    return wordy < len(letters) * 0.6


def _random_letters(letters: str, changes: int, wordy: int) -> bool:
    """A token of letters only (``XWHnPgNEpAEbYKNgqXXAnWzJiVzJZizR``, one in some 250 random base62 tokens of 32):
    long, its case changing at almost every other letter, and almost nothing in it a word (``NVreg_EnableStreamMemOPs``
    and other names change case at their words only)."""
    n = len(letters)
    upper = sum(c.isupper() for c in letters)
    return n >= 24 and 0 < upper < n and changes >= n * 0.35 and wordy < n * 0.6 and _entropy(letters) >= 4.0


def random_spans(text: str) -> list[tuple[int, int]]:
    """Where :func:`looks_random` strings are in ``text`` (hashes after ``sha256=`` and the like excepted)."""
    spans = []
    for match in _CANDIDATE.finditer(text):
        start, value = match.start(), match.group()
        if REDACTED in value or not looks_random(value):
            continue
        if _HASH_CONTEXT.search(text, max(0, start - 16), start):
            continue
        spans.append((start, match.end()))
    return spans
