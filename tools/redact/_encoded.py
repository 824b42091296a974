"""Text that holds other text encoded: UTF-16, base64, hex dumps; decoded, digested, and written back.

A tool result may print a file in a form no label or shape is seen in: ``cat`` of a UTF-16 file (a NUL after
each character), ``base64 FILE``, or a hex dump (``xxd``, ``xxd -p``, ``hexdump -C``, ``od -t x1``, ``od -x``,
``hexdump``: each line's offset, its bytes, and its characters column). Each such part is decoded and digested
as the text it holds, by the same function (:func:`rigaudit.tools.redact._ids.digest_ids`); where an identifier
was in it:

* UTF-16 and base64 are encoded again, with the digests in them (base64 wrapped at its width);
* a hex dump becomes the text it decodes to, with the digests, under a line that says so
  (``[hex dump of 33 bytes, as text with identifiers as digests]``); a dump of bytes that are not text keeps
  its form, the known identifiers' bytes in it overwritten with ``*``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from rigaudit.tools.redact import _known

Digest = Callable[[str], str]
_UTF16 = re.compile(r"(?:[\t\n\r\x20-\x7e]\x00){6,}")
_B64_LINE = re.compile(r"(?m)^[ \t]*([A-Za-z0-9+/]{12,}={0,2})[ \t]*$")
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{10,}={0,2}(?![A-Za-z0-9+/=_-])")
_DUMP_HINT = re.compile(r"(?m)^[ \t]*(?:[0-9A-Fa-f]{6,8}:?[ \t]+)?(?:[0-9A-Fa-f]{2,4}[ \t]+){3}[0-9A-Fa-f]{2}|^[0-9a-fA-F]{40,}$")
_OFFSET = re.compile(r"^[ \t]*([0-9A-Fa-f]{6,8})(:?)[ \t]+")
_COLUMN = re.compile(r"[ \t]+[|>].*[|<][ \t]*$")
_GROUPS = re.compile(r"^[ \t]*((?:[0-9A-Fa-f]{2})+(?:[ \t]+(?:[0-9A-Fa-f]{2})+)*)[ \t]*$")
_REPEAT = re.compile(r"^[ \t]*\*[ \t]*$|^[ \t]*[0-9A-Fa-f]{6,8}:?[ \t]*$")


def _printable(data: str) -> bool:
    return bool(data) and sum(c.isprintable() or c in "\t\r\n" for c in data) >= len(data) * 0.95


def utf16(text: str, digest: Digest) -> str:
    """Runs of UTF-16 text (each character followed by a NUL) digested, encoded again."""
    if "\x00" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        plain = m.group()[::2]
        new = digest(plain)
        return m.group() if new == plain else "".join(c + "\x00" for c in new)

    return _UTF16.sub(one, text)


def _b64_text(run: str) -> str | None:
    try:
        data = base64.b64decode(run, validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if _printable(text) else None


def _b64_block(lines: list[str], digest: Digest) -> list[str] | None:
    joined = "".join(line.strip() for line in lines)
    text = _b64_text(joined)
    if text is None:
        return None
    new = digest(text)
    if new == text:
        return None
    encoded = base64.b64encode(new.encode()).decode("ascii")
    width = len(lines[0].strip()) if len(lines) > 1 else len(encoded)
    return [encoded[i : i + width] for i in range(0, len(encoded), width)]


def b64(text: str, digest: Digest) -> str:
    """Base64 that decodes to text (a block of whole lines, or one run within a line) digested, encoded again."""
    if not _B64_RUN.search(text):
        return text
    lines = text.split("\n")
    out: list[str] = []
    kept: dict[str, int] = {}
    """Lines left as they were, by the generation they were read in (the same again while nothing is learned)."""
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and _B64_LINE.fullmatch(lines[j]):
            j += 1
            if len(lines[j - 1].strip()) % 4 or lines[j - 1].rstrip().endswith("="):
                break  # the block's last line
        new = _b64_block(lines[i:j], digest) if j > i else None
        if new is not None:
            out.extend(new)
            i = j
            continue
        out.append(_runs(lines[i], digest, kept))
        i += 1
    return "\n".join(out)


def _runs(line: str, digest: Digest, kept: dict[str, int]) -> str:
    """The base64 runs within a line digested; a line that held none to digest is not read again while no value is
    learned (a digest would have changed it, and counted what it changed)."""
    learned = _known.generation()
    if kept.get(line) == learned:
        return line
    out = _B64_RUN.sub(lambda m: _b64_run(m.group(), digest), line)
    if out == line and _known.generation() == learned:
        kept[line] = learned
    return out


def _b64_run(run: str, digest: Digest) -> str:
    if len(run) % 4:
        return run
    new = _b64_block([run], digest)
    return run if new is None else new[0]


def _dump_line(line: str) -> tuple[bytes, bool] | None:
    """The bytes one hex dump line shows, and whether they are 16-bit little-endian words (``od -x``); ``None``: not
    a dump line."""
    body, offset = line, _OFFSET.match(line)
    colon = False
    if offset is not None:
        body, colon = line[offset.end() :], bool(offset.group(2))
    body = _COLUMN.sub("", body)
    if colon:  # xxd: the characters column follows two spaces
        body = re.split(r"[ \t]{2,}", body.strip(), maxsplit=1)[0]
    m = _GROUPS.match(body)
    if m is None or (offset is None and len(m.group(1)) < 8):
        return None
    groups = m.group(1).split()
    words = offset is not None and not colon and all(len(g) == 4 for g in groups)
    data = bytes.fromhex("".join(g if not words else g[2:] + g[:2] for g in groups))
    return data, words


def hexdump(text: str, digest: Digest, mask: Callable[[bytes], bytes]) -> str:
    """Each hex dump in ``text`` (consecutive dump lines) decoded: digested as text, or masked as bytes."""
    if not _DUMP_HINT.search(text):
        return text
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        block: list[bytes] = []
        offsets = False
        j = i
        while j < len(lines):
            line = lines[j].rstrip("\r\n")
            if block and offsets and _REPEAT.match(line):  # ``*`` (lines repeated), the offset at the end
                j += 1
                continue
            parsed = _dump_line(line)
            if parsed is None:
                break
            block.append(parsed[0])
            offsets = offsets or _OFFSET.match(line) is not None
            j += 1
        if not block:
            out.append(lines[i])
            i += 1
            continue
        data = b"".join(block)
        out.append(_decoded(lines[i:j], data, digest, mask))
        i = j
    return "".join(out)


def _decoded(lines: list[str], data: bytes, digest: Digest, mask: Callable[[bytes], bytes]) -> str:
    original = "".join(lines)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and _printable(text):
        new = digest(text)
        if new == text:
            return original
        return f"[hex dump of {len(data)} bytes, as text with identifiers as digests]\n{new.rstrip(chr(10))}\n"
    masked = mask(data)
    if masked == data:
        return original
    rows = [masked[k : k + 16] for k in range(0, len(masked), 16)]
    rendered = "".join(
        f"{k * 16:08x}: {' '.join(row[n : n + 2].hex() for n in range(0, len(row), 2)):<39}  "
        + "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        + "\n"
        for k, row in enumerate(rows)
    )
    return "[hex dump with identifiers masked]\n" + rendered
