"""Free text (files, command output, log lines, model messages): secrets replaced, everything else kept.

Three passes, each leaving ``<redacted>`` where a value was:
1. shapes (:mod:`._shapes`): private key blocks, token formats, JWTs, webhook paths, URL userinfo,
   ``Bearer``/``Basic`` credentials, password hashes;
2. names (:mod:`._names`): the values of secret names in ``NAME=value`` (``export``, ``env``, query
   strings, connection strings), ``"name": "value"`` (JSON, Python), ``name: value`` (YAML, HTTP
   headers, ``Cookie``), ``name = value`` (INI), ``<name>value</name>`` (XML), and the flags of
   command lines, word by word (:mod:`._argv`);
3. long random strings that are left (:func:`._shapes.looks_random`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

from rigaudit.tools.redact._argv import ArgvWalk, redact_words
from rigaudit.tools.redact._memo import TextMemo
from rigaudit.tools.redact._names import secret_strength
from rigaudit.tools.redact._records import redact_records
from rigaudit.tools.redact._shapes import PEM, REDACTED, SHAPES, random_spans
from rigaudit.tools.redact._spaced import directives, inline, words_lines
from rigaudit.tools.redact._tally import Tally
from rigaudit.tools.redact._units import unit_environments
from rigaudit.tools.redact._values import query_secret, secret_value

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGN = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*)=")
"""``name=``: an environment name, or a dotted or dashed key (``rd.auth_token=``, ``db.password=``, ``foo-password=``)."""
_FLAG_AFTER = re.compile(r"\s--?[A-Za-z]")
_COMMENT = r"(?:(?:#+|;+|/{2,}|!)[ \t]*)?"
"""A comment marker a pair may hide behind (``# password: x``, ``; password = x``)."""
_LINE_START = re.compile(r"(?:export\s+|declare\s+-x\s+|set\s+|setenv\s+)?", re.ASCII)
_JSON_PAIR = re.compile(r"([\"'])([A-Za-z_][\w.-]*)\1(\s*:\s*)([\"'])((?:(?!\4)[^\\]|\\.)*)\4")
_YAML_PAIR = re.compile(rf"^([ \t]*{_COMMENT}(?:-[ \t]+)?)([A-Za-z_][\w.-]*)([ \t]*:[ \t]+)(?![{{\[&*#])(\S[^\r\n]*)", re.M)
_INI_PAIR = re.compile(rf"^([ \t]*{_COMMENT})([A-Za-z_][\w.-]*)([ \t]+=[ \t]*|=[ \t]+)(\S[^\r\n]*)", re.M)
_HEADER = re.compile(
    r"(?:^|(?<=[\s\"'{(,;]))([A-Za-z][\w-]*)([ \t]*:[ \t]*)"
    r"(?!(?i:bearer|basic|token|digest|negotiate|apikey)[ \t]+<redacted>)"
    r"(?:(?:Bearer|Basic|Token|Digest|Negotiate|ApiKey)[ \t]+)?(?!<redacted>)([^\s\"',;]+)",
    re.M,
)
_COOKIE = re.compile(r"(?im)\b((?:set-)?cookie[ \t]*:(?![ \t]*<redacted>)[ \t]*)([^\r\n\"']+)")
_XML = re.compile(r"<([A-Za-z_][\w.-]*)(\s[^<>]*)?>([^<]{1,4096})</\1\s*>")
_WHITESPACE = re.compile(r"(\s+)")
_ARGV_HINT = re.compile(r"(?:^|\s)--?[A-Za-z]|\bmc(?:li)?\s+(?:alias\s+set|config\s+host\s+add)\s")
"""A line worth walking as a command line: a flag, or a program that takes a secret as a plain argument."""
"""A line that holds a flag: only those can hold a credential flag's value (``ps`` output, scripts)."""
_NAME_HINT = re.compile(
    r"key|token|secret|pass|pwd|pw|auth|cred|cookie|bearer|dsn|sig|webhook|jwt|otp|sas|pat|psk|sess|community|identified"
)
"""Every secret name holds one of these (lower-cased): lines without any need no name rule."""


def _count(tally: Tally | None, kind: str) -> None:
    if tally is not None:
        tally.add(kind)


def _value_end(text: str, start: int) -> int:
    """Where an inline ``NAME=value`` ends: its closing quote, a blank, a quote, or ``&``/``;`` before the next ``NAME=``."""
    if start < len(text) and text[start] in "\"'":
        close = text.find(text[start], start + 1)
        return len(text) if close < 0 else close + 1
    end = start
    while end < len(text) and not text[end].isspace() and text[end] not in "\"'":
        if text[end] in "&;," and re.match(rf"[&;,]\s*{_NAME}=", text[end:]):
            break
        end += 1
    return end


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return end - 1 if end > start and text[end - 1] == "\r" else end


def _in_query(text: str, start: int) -> bool:
    """Whether the ``name=`` at ``start`` is a parameter of a URL's query: after the ``?`` or ``&`` of one token."""
    if start == 0 or text[start - 1] not in "?&":
        return False
    token_start = max(text.rfind(blank, 0, start) for blank in " \t\n\"'<>") + 1
    return "?" in text[token_start:start]


def _assignments(text: str, tally: Tally | None) -> str:
    if "=" not in text:
        return text
    out: list[str] = []
    pos = 0
    for match in _ASSIGN.finditer(text):
        if match.start() < pos:
            continue
        name, value_start = match.group(1), match.end()
        line_start = text.rfind("\n", 0, match.start()) + 1
        prefix = _LINE_START.match(text, line_start)
        rest = text[value_start : _line_end(text, value_start)]
        whole = prefix is not None and prefix.end() == match.start() and not _FLAG_AFTER.search(rest)
        value_end = _line_end(text, value_start) if whole else _value_end(text, value_start)
        value = text[value_start:value_end]
        judge = query_secret if _in_query(text, match.start()) else secret_value
        if not judge(name, value.strip("\"'")):
            continue
        out += [text[pos:value_start], REDACTED]
        pos = value_end
        _count(tally, "credential")
    out.append(text[pos:])
    return "".join(out)


def _pairs(text: str, tally: Tally | None) -> str:
    def json_pair(m: re.Match[str]) -> str:
        if not secret_value(m.group(2), m.group(5)):
            return m.group(0)
        _count(tally, "credential")
        return f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{m.group(4)}{REDACTED}{m.group(4)}"

    def line_pair(m: re.Match[str]) -> str:
        value = m.group(4).rstrip(" \t\r")
        if value[:1] in "|>" and value.strip("|>+-0123456789") == "":
            return m.group(0)  # a block scalar: its lines follow (see _blocks)
        if not secret_value(m.group(2), value.strip("\"'")):
            return m.group(0)
        _count(tally, "credential")
        return f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group(4)[len(value) :]}"

    def header(m: re.Match[str]) -> str:
        if not secret_value(m.group(1), m.group(3), loose=True):
            return m.group(0)
        _count(tally, "credential")
        return m.group(0)[: m.start(3) - m.start(0)] + REDACTED

    def cookie(m: re.Match[str]) -> str:
        if REDACTED not in m.group(2):  # a cookie named a secret (sessionid=) is counted where it was redacted
            _count(tally, "credential")
        return m.group(1) + REDACTED

    def xml(m: re.Match[str]) -> str:
        if not secret_value(m.group(1), m.group(3).strip()):
            return m.group(0)
        _count(tally, "credential")
        return f"<{m.group(1)}{m.group(2) or ''}>{REDACTED}</{m.group(1)}>"

    if '"' in text or "'" in text:
        text = _JSON_PAIR.sub(json_pair, text)
    if ":" in text:
        text = _YAML_PAIR.sub(line_pair, text)
        if "ookie" in text or "OOKIE" in text:
            text = _COOKIE.sub(cookie, text)
        text = _HEADER.sub(header, text)
    if "=" in text:
        text = _INI_PAIR.sub(line_pair, text)
    if "</" in text:
        text = _XML.sub(xml, text)
    return text


def _named(text: str, tally: Tally | None) -> str:
    """The name rules (assignments, pairs, headers), line by line, on the lines that can hold a secret name."""
    lowered = text.lower()
    if not _NAME_HINT.search(lowered):
        return text
    out: list[str] = []
    pos = 0
    done: dict[str, _Done] = {}
    for start, end in _hinted_lines(text, lowered):
        out += [text[pos:start], _once(done, text[start:end], _named_line, tally)]
        pos = end
    out.append(text[pos:])
    return _entries(_blocks("".join(out), tally), tally)


def _hinted_lines(text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """Where each line that holds a :data:`_NAME_HINT` starts and ends (a hint found in ``lowered``, placed in ``text``).

    Where lower-casing kept every character's place (nearly always), the next hint is looked for after the line."""
    pos = after = 0
    aligned = len(lowered) == len(text)
    hints = _NAME_HINT.finditer(lowered)
    while (hint := _NAME_HINT.search(lowered, after) if aligned else next(hints, None)) is not None:
        after = hint.end()
        start = text.rfind("\n", 0, hint.start()) + 1
        if start < pos:
            continue
        end = text.find("\n", hint.end())
        end = len(text) if end < 0 else end
        yield start, end
        pos = after = end


def _named_line(line: str, tally: Tally | None) -> str:
    return inline(_pairs(_assignments(line, tally), tally), tally)


_Done = tuple[str, tuple[tuple[str, int], ...]]


def _once(done: dict[str, _Done], line: str, redact: Callable[[str, Tally | None], str], tally: Tally | None) -> str:
    """``redact(line)``, done once for each distinct line of a text (``/proc/cpuinfo`` repeats its lines for each CPU):
    a line's redaction depends on the line alone, and what it counted is counted again for each."""
    known = done.get(line)
    if known is None:
        counted = Tally()
        known = done[line] = (redact(line, counted), tuple(counted.items()))
    if tally is not None:
        for kind, n in known[1]:
            tally.add(kind, n)
    return known[0]


_BLOCK_HINT = re.compile(r":[ \t]*[|>][+-]?\d*[ \t]*$", re.M)
_BLOCK_KEY = re.compile(r"^([ \t]*)(?:-[ \t]+)?([A-Za-z_][\w.-]*)[ \t]*:[ \t]*[|>][+-]?\d*[ \t]*$")


_ENTRY = re.compile(
    r"^([ \t]*-?[ \t]*)(?:name|key)[ \t]*:[ \t]*[\"']?(?P<name>[A-Za-z_][\w.-]*)[\"']?[ \t]*\n"
    r"(?P<indent>[ \t]*)value[ \t]*:[ \t]*(?P<value>\S[^\n]*)",
    re.M,
)
_FLOW_ENTRY = re.compile(
    r"\b(?:name|key)(?P<q1>[\"']?)[ \t]*[:=][ \t]*(?P<q2>[\"']?)(?P<name>[A-Za-z_][\w.-]*)(?P=q2)[ \t]*,?[ \t]*"
    r"(?P<q3>[\"']?)value(?P=q3)[ \t]*[:=][ \t]*(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s,}\"'/>]+))"
)
"""An entry on one line: ``{name: DB_PASSWORD, value: x}`` (YAML flow), ``<add key="ApiKey" value="x"/>`` (XML)."""


def _entries(text: str, tally: Tally | None) -> str:
    """``- name: OPENAI_API_KEY`` then ``value: ...`` (Kubernetes env), entries on one line, ``KEY VALUE`` lines and
    ``requirepass VALUE`` directives (:mod:`._spaced`)."""

    def entry(m: re.Match[str]) -> str:
        value = m.group("value").rstrip()
        if not secret_value(m.group("name"), "x") or REDACTED in value:
            return m.group(0)
        _count(tally, "credential")
        return m.group(0)[: m.start("value") - m.start(0)] + REDACTED

    def flow(m: re.Match[str]) -> str:
        group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
        if not m.group(group) or not secret_value(m.group("name"), "x") or REDACTED in m.group(group):
            return m.group(0)
        _count(tally, "credential")
        start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
        return m.group(0)[:start] + REDACTED + m.group(0)[end:]

    if "value" in text:
        text = _ENTRY.sub(entry, text)
        if "name" in text or "key" in text:
            text = _FLOW_ENTRY.sub(flow, text)
    return directives(words_lines(text, tally), tally)


def _blocks(text: str, tally: Tally | None) -> str:
    """YAML block scalars under a secret key (``private_key: |``): the indented lines below it."""
    if not _BLOCK_HINT.search(text):
        return text
    lines = text.splitlines(True)
    indent: int | None = None
    for i, line in enumerate(lines):
        if indent is not None:
            body = line.rstrip("\r\n")
            if body.strip() and len(body) - len(body.lstrip()) > indent:
                lines[i] = body[: len(body) - len(body.lstrip())] + REDACTED + line[len(body) :]
                continue
            if body.strip():
                indent = None
        key = _BLOCK_KEY.match(line.rstrip("\r\n"))
        if key and secret_strength(key.group(2)):
            indent = len(key.group(1))
            _count(tally, "credential")
    return "".join(lines)


def _options(text: str, tally: Tally | None) -> str:
    """Command lines written as text (``ps`` output, scripts, unit files): word by word, a line a command.

    Lines of one word each (``strings /proc/PID/cmdline``, ``tr '\\0' '\\n'``) are one command, its program
    on the first of them: a flag on one line and its value on the next are read together."""
    if not _ARGV_HINT.search(text):
        return text
    out = []
    walk: ArgvWalk | None = None
    done: dict[str, _Done] = {}
    for line in text.splitlines(True):
        if line in done or len(line.split()) != 1:  # a command of its own: read with a walk of its own
            walk = None
            out.append(_once(done, line, _command_line, tally))
            continue
        if walk is None:
            walk = ArgvWalk(tally)
        out.append(_walk_line(walk, line))
    return "".join(out)


def _command_line(line: str, tally: Tally | None) -> str:
    return _walk_line(ArgvWalk(tally), line) if _ARGV_HINT.search(line) else line


def _walk_line(walk: ArgvWalk, line: str) -> str:
    parts = _WHITESPACE.split(line)
    for i in range(0, len(parts), 2):
        if parts[i]:
            parts[i] = walk.word(parts[i], parts[i + 2] if i + 2 < len(parts) and parts[i + 2] else None)
    return "".join(parts)


def _shapes(text: str, tally: Tally | None) -> str:
    def pem(m: re.Match[str]) -> str:
        if m.group("body").strip(" \t\r\n\\n") == REDACTED:
            return m.group(0)  # redacted before (a recorded snapshot shared): nothing new to count
        _count(tally, "private_key")
        end = m.group(0)[m.end("body") - m.start(0) :]
        return f"-----BEGIN {m.group(1)}-----{REDACTED}{end}"

    if "PRIVATE KEY" in text:
        text = PEM.sub(pem, text)
    lowered = text.lower()
    for shape in SHAPES:
        if shape.hint and not any(h in lowered for h in shape.hint):
            continue

        def sub(m: re.Match[str], kind: str = shape.kind, group: int | str = shape.group) -> str:
            if REDACTED in m.group(group):
                return m.group(0)
            _count(tally, kind)
            start, end = m.start(group) - m.start(0), m.end(group) - m.start(0)
            return m.group(0)[:start] + REDACTED + m.group(0)[end:]

        text = shape.pattern.sub(sub, text)
    return text


def _random(text: str, tally: Tally | None) -> str:
    spans = random_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for start, end in spans:
        out += [text[pos:start], REDACTED]
        pos = end
        _count(tally, "random")
    out.append(text[pos:])
    return "".join(out)


_QUICK = re.compile(
    r"[=:$<-]|[A-Za-z0-9+/_]{16}|[BbTtPpAaSsKkCcIi](?:earer|asic|EARER|ASIC|oken|OKEN|ass|ASS|wd|WD|sk|SK|uth|UTH"
    r"|ecret|ECRET|ey|EY|red|RED|dentified|DENTIFIED)|ommunity"
)
"""Text without any of these holds no secret (most sysfs values): it is returned at once. (A first letter, then the
rest of each word: faster than an alternation of whole words.)"""


_NETRC = re.compile(r"(?<!\S)((?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]+password[ \t]+)(\S+)")
"""A netrc entry's password, wherever the line is (a log line quoting a ``.netrc``)."""


def _netrc(text: str, tally: Tally | None) -> str:
    if "password" not in text or ("machine" not in text and "default" not in text):
        return text

    def entry(m: re.Match[str]) -> str:
        if m.group(2) == REDACTED:
            return m.group(0)
        _count(tally, "credential")
        return m.group(1) + REDACTED

    return _NETRC.sub(entry, text)


_SECRET_BLOCK = re.compile(r"(?m)^([ \t]*)(stringData|data):[ \t]*\r?\n((?:\1[ \t]+[^\n]*\n?)+)")
_BLOCK_ENTRY = re.compile(r"(?m)^([ \t]+[\"']?[^\s:\"'#]+[\"']?:)[ \t]+(?![|>][-+]?[ \t]*$)(\S[^\n]*)$")
_SECRET_KIND = re.compile(r"(?m)^[ \t]*kind:[ \t]*[\"']?Secret[\"']?[ \t]*$")


def _k8s_secrets(text: str, tally: Tally | None) -> str:
    """The values under a Kubernetes Secret's ``stringData:`` (any manifest) or ``data:`` (a ``kind: Secret``)."""
    if "ata:" not in text:
        return text
    is_secret = _SECRET_KIND.search(text) is not None

    def block(m: re.Match[str]) -> str:
        if m.group(2) == "data" and not is_secret:
            return m.group(0)

        def entry(e: re.Match[str]) -> str:
            if e.group(2) == REDACTED:
                return e.group(0)
            _count(tally, "credential")
            return f"{e.group(1)} {REDACTED}"

        return m.group(0)[: m.start(3) - m.start(0)] + _BLOCK_ENTRY.sub(entry, m.group(3))

    return _SECRET_BLOCK.sub(block, text)


def _redact(text: str, tally: Tally | None) -> str:
    text = _k8s_secrets(_netrc(unit_environments(text, tally), tally), tally)
    return _random(_options(_named(_shapes(redact_records(text, _redact, tally), tally), tally), tally), tally)


_LONG = TextMemo()
"""A long text's redaction and what it counted (a text redacted again: the same file recorded twice)."""


@functools.lru_cache(maxsize=16384)
def _short(text: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A short text's redaction and what it counted (paths, refs and sysfs values repeat: done once)."""
    tally = Tally()
    return _redact(text, tally), tuple(tally.items())


def _nul_words(text: str, tally: Tally | None) -> str:
    """NUL-separated words (``cat /proc/PID/cmdline`` as a reader prints it): one argument vector, then each word."""
    return "\x00".join(redact_text(word, tally) for word in redact_words(text.split("\x00"), tally))


def redact_text(text: str, tally: Tally | None = None) -> str:
    """``text`` with every secret value replaced by ``<redacted>`` (the same object when nothing changed)."""
    if "\x00" in text:
        out = _nul_words(text, tally)
        return text if out == text else out
    if len(text) < 4 or not _QUICK.search(text):
        return text
    if len(text) > 512:
        out = _LONG.run((text,), lambda counted: _redact(text, counted), tally)
    else:
        out, counts = _short(text)
        if tally is not None:
            for kind, n in counts:
                tally.add(kind, n)
    return text if out == text else out
