"""Keep secrets out of snapshots and command environments.

A *secret name* is an environment variable (or option, or config key) whose name contains
KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, in any case. Redaction replaces the value
with ``<redacted>`` and keeps the name, so the evidence still says the variable was set.
Over-redaction (``KEYMAP=us``) is accepted; a leaked token is not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

REDACTED = "<redacted>"
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# NAME=value anywhere in a line (Environment=A=b, lxc.environment: A=b, "Env": ["A=b"], env output).
_ASSIGN = re.compile(rf"(?<![A-Za-z0-9_.\-])({_NAME})=")
# "name": "value" (JSON) and, at the start of a line, name: value (YAML, docker-compose).
_JSON_PAIR = re.compile(rf'"({_NAME})"(\s*:\s*)"((?:[^"\\]|\\.)*)"')
_YAML_PAIR = re.compile(rf"^(\s*(?:-\s+)?)({_NAME})(\s*:[ \t]+)(?![{{\[|>&*])(\S.*)$")
# --api-key VALUE / --api-key=VALUE on command lines (ps output, /proc/PID/cmdline).
_OPTION = re.compile(r"(?<!\S)(--?[A-Za-z0-9][A-Za-z0-9_.\-]*)(=|[ \t]+)(?!-)(\S+)")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without secret variables (for commands the tool runs)."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}


def _value_end(line: str, start: int) -> int:
    """Where an assigned value ends: its closing quote, or the next blank or quote."""
    if start < len(line) and line[start] in "\"'":
        close = line.find(line[start], start + 1)
        return len(line) if close < 0 else close + 1
    end = start
    while end < len(line) and not line[end].isspace() and line[end] not in "\"'":
        end += 1
    return end


def _redact_assignments(line: str) -> str:
    stripped = line.lstrip()
    for prefix in ("export ", "declare -x ", "set "):
        if stripped.startswith(prefix):
            stripped = stripped[len(prefix) :].lstrip()
            break
    whole = re.fullmatch(rf"({_NAME})=(.*)", stripped, flags=re.DOTALL)
    if whole and is_secret_name(whole.group(1)) and whole.group(2):
        # A whole line NAME=value (env, /etc/environment): the value runs to the end of the line.
        return line[: len(line) - len(stripped)] + f"{whole.group(1)}={REDACTED}"
    out: list[str] = []
    pos = 0
    for match in _ASSIGN.finditer(line):
        if match.start() < pos or not is_secret_name(match.group(1)):
            continue
        value_start = match.end()
        value_end = _value_end(line, value_start)
        if value_end == value_start:
            continue
        out.append(line[pos:value_start])
        out.append(REDACTED)
        pos = value_end
    out.append(line[pos:])
    return "".join(out)


def _redact_pairs(line: str) -> str:
    line = _JSON_PAIR.sub(lambda m: f'"{m.group(1)}"{m.group(2)}"{REDACTED}"' if is_secret_name(m.group(1)) else m.group(0), line)
    yaml = _YAML_PAIR.match(line)
    if yaml and is_secret_name(yaml.group(2)):
        line = f"{yaml.group(1)}{yaml.group(2)}{yaml.group(3)}{REDACTED}"
    return line


def _redact_options(line: str) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1).lstrip("-")
        return f"{m.group(1)}{m.group(2)}{REDACTED}" if is_secret_name(name) else m.group(0)

    return _OPTION.sub(sub, line)


def redact_line(line: str) -> str:
    return _redact_options(_redact_pairs(_redact_assignments(line)))


def redact_text(text: str) -> str:
    """Redact secret values in free text: env output, unit files, LXC configs, JSON, YAML, ps."""
    if "=" not in text and ":" not in text and "-" not in text:
        return text
    return "".join(redact_line(line[:-1]) + "\n" if line.endswith("\n") else redact_line(line) for line in text.splitlines(True))


def redact_environ(data: bytes) -> bytes:
    """Redact a NUL-separated environment block (``/proc/PID/environ``)."""
    parts = data.split(b"\x00")
    out = []
    for part in parts:
        name, sep, _value = part.partition(b"=")
        secret = sep and is_secret_name(name.decode("utf-8", "replace"))
        out.append(name + b"=" + REDACTED.encode() if secret else part)
    return b"\x00".join(out)


def redact_cmdline(data: bytes) -> bytes:
    """Redact a NUL-separated argument vector (``/proc/PID/cmdline``): ``--api-key X``, ``A_TOKEN=x``."""
    args = data.split(b"\x00")
    out: list[bytes] = []
    hide_next = False
    for arg in args:
        text = arg.decode("utf-8", "replace")
        if hide_next and arg and not text.startswith("-"):
            out.append(REDACTED.encode())
            hide_next = False
            continue
        hide_next = False
        kept = arg
        if text.startswith("-"):
            name, sep, _value = text.lstrip("-").partition("=")
            if is_secret_name(name):
                if sep:
                    kept = text[: text.index("=") + 1].encode() + REDACTED.encode()
                else:
                    hide_next = True
        else:
            name, sep, _value = text.partition("=")
            if sep and re.fullmatch(_NAME, name) and is_secret_name(name):
                kept = name.encode() + b"=" + REDACTED.encode()
        out.append(kept)
    return b"\x00".join(out)


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def redact_file(path: str, data: bytes) -> bytes:
    """Redact a recorded file by its kind; binary files (PCI config space) are left untouched."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith("/proc/") and name == "environ":
        return redact_environ(data)
    if path.startswith("/proc/") and name == "cmdline" and b"\x00" in data:
        return redact_cmdline(data)
    if not _is_text(data):
        return data
    text = data.decode("utf-8")
    redacted = redact_text(text)
    return data if redacted == text else redacted.encode("utf-8")
