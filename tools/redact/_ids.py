"""Identifiers as digests: what says which machine, board or device this is, in what a model or a transcript gets.

The ids rigaudit keeps only as digests (docs/secrets.md, "Which machine"), and those a tool result may print
besides, become ``<kind>:<16 hex digits>``: the first 16 hex digits of the SHA-256 of the value, lower-case, as
``machine-id:`` is everywhere (:func:`rigaudit.tools.bench.machine.token`, the one digest). One value has one
digest wherever it is printed, so a model still sees that a value is there, and that two are the same; never the
value. Kinds: ``machine-id``, ``kernel-boot`` (the boot id), ``container-boot`` (LXC's), ``product-uuid``,
``gpu-uuid`` and ``mig-uuid``, ``serial`` (serial numbers and asset tags), ``mac`` (MAC, InfiniBand and GUID
addresses), ``uuid`` and ``id`` (any other UUID or 32-hex id on a line alone, or labelled ``UUID:``).

Found wherever it is printed, whichever command or path printed it:

* by its shape: GPU and MIG UUIDs, MAC, InfiniBand and GUID addresses (the shapes share bundles replace);
* by its label: ``Serial Number:`` (nvidia-smi -q, dmidecode, lspci VPD, smartctl), ``Board Serial :`` (ipmitool),
  ``ID_SERIAL=``, ``"serial": "..."``, ``Device Serial Number``, ``Asset Tag:``, ``Machine ID:`` and ``Boot ID:``
  (hostnamectl), ``_MACHINE_ID=`` and ``_BOOT_ID=`` (the journal), ``Product UUID:``, ``UUID: <uuid>``;
* by the file that holds it (a path ending ``machine-id``, ``random/boot_id``, ``dmi/id/product_uuid``, a DMI
  serial or asset tag, a sysfs ``serial``; under a snapshot's root too): its content when read; a line
  ``PATH:VALUE`` (``grep -r . /sys/class/dmi/id``) and the lines under ``==> PATH <==`` (``head`` of several
  files); and what a command that prints files (``cat``, ``head``, ``grep``...) prints when it names one;
* in content (a file, a command's output), a line that is only a 32-hex id or a UUID.

Values that identify nothing are kept: junk serials (``To Be Filled By O.E.M.``), all-zero and all-ones
addresses, multicast MACs, and digests themselves (digesting twice changes nothing).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Sequence
from typing import Any

from rigaudit.tools.bench.machine import digest, token
from rigaudit.tools.pci import dsn_serials, mask_vpd, zero_dsn
from rigaudit.tools.redact import _encoded, _known
from rigaudit.tools.redact._memo import TextMemo
from rigaudit.tools.redact._tally import Tally

HEX = "[0-9A-Fa-f]"
UUID = rf"{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}"
GPU_UUID = rf"(?<![A-Za-z0-9])(?:[Gg][Pp][Uu]|[Mm][Ii][Gg])-{UUID}(?![A-Za-z0-9])"
"""A GPU's or MIG device's UUID (``GPU-8f3c...``), wherever it is."""
ANY_UUID = rf"(?<![A-Za-z0-9]){UUID}(?![A-Za-z0-9])"
IB_ADDRESS = rf"(?<![0-9A-Fa-f:]){HEX}{{2}}(?::{HEX}{{2}}){{19}}(?![0-9A-Fa-f:])"
"""A 20-byte InfiniBand hardware address (``ip link``): flags and queue pair, subnet prefix, port GUID."""
MAC = rf"(?<![0-9A-Fa-f:]){HEX}{{2}}(?::{HEX}{{2}}){{5}}(?![0-9A-Fa-f:])"
GUID = rf"(?<![0-9A-Fa-f:]){HEX}{{4}}(?::{HEX}{{4}}){{3}}(?![0-9A-Fa-f:])"
"""An InfiniBand node or port GUID as sysfs writes it (``0002:c903:00a1:b2c4``)."""
MACHINE_ID = re.compile(r"^[0-9a-f]{32}$")
SERIAL_PHRASES = (
    re.compile(r"(?i)\bserial[ _-]?(?:number|no\.?|num)\"?\s*[:=]\s*\"?([A-Za-z0-9][A-Za-z0-9._/-]{3,63})"),
    re.compile(r"(?i)(?:\bID_SERIAL(?:_SHORT)?=|\"serial(?:_?number)?\"\s*:\s*\")([A-Za-z0-9][A-Za-z0-9._/-]{3,63})"),
    re.compile(r"(?i)<serial(?:[ _-]?(?:number|no|num))?>\s*([^<\s][^<]{2,63}?)\s*</serial"),
    re.compile(r"(?i)\bDevice Serial Number ([0-9a-f]{2}(?:-[0-9a-f]{2}){7})\b"),
    re.compile(r"(?i)\basset[ _-]?tag\s*[:=]\s*\"?([A-Za-z0-9][A-Za-z0-9._/-]{3,63})"),
)
"""Where a serial number or asset tag is written down by name (share bundles harvest them so too)."""
_MORE_SERIALS = (
    re.compile(
        r"(?i)(?<![/A-Za-z0-9])_?(?:board|product|chassis|system|hardware|module)[ _-]?serial(?:[ _-]?number)?\"?\s*[:=]\s*\"?"
        r"([^\s\"'<>]{2,63})"
    ),
    re.compile(r"(?i)\bserial[ \t]+(?=[A-Za-z0-9._/-]*\d)([A-Za-z0-9][A-Za-z0-9._/-]{3,63})"),
    re.compile(r"(?i)\bserial[ _-]?(?:number|no\.?|num)[ \t]*[:=][ \t]*\"?([^\r\n\"'<>,;]{0,62}[^\s\"'<>,;])"),
)
"""ipmitool's and hostnamectl's ``Board Serial : X``; prose such as rigaudit's own ``serial 1654923000123``; a
serial number that does not start with a letter or digit (Dell's board serials: ``.7XQ3PL2.CN...``)."""
JUNK_SERIALS = frozenset(
    {
        "not specified",
        "to be filled by o.e.m.",
        "default string",
        "system serial number",
        "0123456789",
        "1234567890",
        "none",
        "n/a",
        "na",
        "unknown",
        "not available",
        "not applicable",
        "[n/a]",
    }
)
"""What firmware writes where no serial was set: kept (it identifies nothing, and says that none is set)."""
DMI_SERIALS = frozenset({"product_serial", "board_serial", "chassis_serial", "board_asset_tag", "chassis_asset_tag"})
_SYS_SERIALS = frozenset({"serial", "serial_number"})

_PROSE = _MORE_SERIALS[1]
"""``serial N`` in prose: a weak label, so its values are not learned (:mod:`._known`)."""

_KINDS = "machine-id|kernel-boot|container-boot|product-uuid|gpu-uuid|mig-uuid|serial|mac|uuid|id"
DIGEST = rf"(?:{_KINDS}):[0-9a-f]{{16}}(?![0-9A-Za-z])"
"""What a digested value looks like (``serial:1a2b3c4d5e6f7a8b``)."""
_DIGESTED = re.compile(DIGEST)
_LABELS = (
    (re.compile(rf"(?i)(?<![A-Za-z0-9])_?machine[ _-]?id\"?\s*[:=]\s*\"?({HEX}{{32}})(?![0-9A-Fa-f])"), "machine-id"),
    (re.compile(rf"(?i)(?<![A-Za-z0-9])_?boot[ _-]?id\"?\s*[:=]\s*\"?({UUID}|{HEX}{{32}})(?![0-9A-Fa-f])"), "kernel-boot"),
    (re.compile(rf"(?i)\bproduct[ _-]?uuid\"?\s*[:=]\s*\"?({UUID})(?![0-9A-Fa-f])"), "product-uuid"),
    (re.compile(rf"(?i)(?<![\w-])uuid\"?\s*[:=]\s*\"?({UUID})(?![0-9A-Fa-f])"), "uuid"),
)
_SHAPES = re.compile(rf"(?P<gpu>{GPU_UUID})|(?P<ib>{IB_ADDRESS})|(?P<mac>{MAC})|(?P<guid>{GUID})")
_LONE = re.compile(rf"(?m)^([ \t]*)({HEX}{{32}}|{UUID})([ \t]*\r?)$")
_QUICK = re.compile(rf"(?i){HEX}{{2}}[:-]{HEX}{{2}}|{HEX}{{16}}|serial|uuid|asset|_id|machine|boot")
"""Text without any of these holds no identifier (most sysfs values): returned at once."""
_LABEL_HINT = re.compile(r"(?i)serial|uuid|machine|boot|asset")
_LABEL_WORDS = ("serial", "uuid", "machine", "boot", "asset")
_SHAPE_HINT = re.compile(rf"{HEX}{{2}}:{HEX}{{2}}:|{HEX}{{4}}:{HEX}{{4}}:|(?i:gpu|mig)-{HEX}{{8}}-")
_SHAPE_COLON = re.compile(rf":(?:(?<={HEX}{{2}}:){HEX}{{2}}:|(?<={HEX}{{4}}:){HEX}{{4}}:)")
_SHAPE_DASH = re.compile(rf"-(?<=(?i:gpu|mig)-){HEX}{{8}}-")
""":data:`_SHAPE_HINT` found from its colons and dashes (a search for a literal first is many times faster)."""


def _label_hint(text: str) -> bool:
    """``_LABEL_HINT.search(text)``; ASCII text (nearly all) lower-cased and searched for each word, which is faster."""
    if not text.isascii():
        return _LABEL_HINT.search(text) is not None
    lowered = text.lower()
    return any(word in lowered for word in _LABEL_WORDS)


def _shape_hint(text: str) -> bool:
    """``_SHAPE_HINT.search(text)``."""
    return (":" in text and _SHAPE_COLON.search(text) is not None) or ("-" in text and _SHAPE_DASH.search(text) is not None)


_LONE_HINT = re.compile(rf"{HEX}{{8}}")
_FILE_HINT = re.compile(r"machine-id|boot_id|lxc-boot-id|/dmi/id/|serial")
_PATH_LINE = re.compile(r"(?m)^(?P<path>/[^\s:]*):(?P<value>[^\r\n]*)")
_HEAD = re.compile(r"(?m)^==> (?P<path>.+?) <==[ \t]*\r?$")
PRINTERS = frozenset(
    {
        *("cat", "head", "tail", "tac", "nl", "grep", "egrep", "fgrep", "rg", "zgrep", "zcat", "strings", "more", "less"),
        *("sort", "uniq", "cut", "fold", "paste", "pr", "expand", "column", "fmt", "rev", "sed", "awk", "tr"),
        *("xxd", "od", "hexdump", "hd", "base64", "base32", "iconv"),
    }
)
"""Programs that print what the files they name hold (some in another form: decoded first, :mod:`._encoded`)."""


def file_kind(path: str) -> str | None:
    """The kind of identifier the file at ``path`` holds, or ``None`` (by its name: under a snapshot's root too)."""
    name = posixpath.basename(path)
    if name == "machine-id":
        return "machine-id"
    if path.endswith("/random/boot_id"):
        return "kernel-boot"
    if name == ".lxc-boot-id":
        return "container-boot"
    if "/dmi/id/" in path and name == "product_uuid":
        return "product-uuid"
    if ("/dmi/id/" in path and name in DMI_SERIALS) or ("/sys/" in f"/{path}" and name in _SYS_SERIALS):
        return "serial"
    return None


def _count(tally: Tally | None) -> None:
    if tally is not None:
        tally.add("identifier")


def _uuid_text(value: str) -> str:
    """A UUID as the kernel writes it: lower-case, dashed (a boot id written as 32 hex digits is the same id)."""
    v = value.strip().lower().replace("-", "")
    return f"{v[:8]}-{v[8:12]}-{v[12:16]}-{v[16:20]}-{v[20:]}" if re.fullmatch("[0-9a-f]{32}", v) else value.strip().lower()


def as_digest(kind: str, value: str, tally: Tally | None = None, *, learn: bool = True) -> str | None:
    """``kind:<digest>`` of ``value``; ``None`` when it identifies nothing (keep it as it is). With ``learn``, the
    value is kept (:mod:`._known`), so that printed anywhere else, in any form, it becomes the same digest."""
    found = _as_digest(kind, value, tally)
    if found is not None and kind in ("id", "uuid"):
        known = _known.token_of(value) or _known.token_of(value.strip().replace("-", ""))
        found = known or found  # the kind it was learned as (a machine-id printed alone is one)
    if found is not None and learn and kind != "mac":
        _known.learn({"gpu-uuid": "GPU-", "mig-uuid": "MIG-"}.get(kind, "") + value.strip(), found)
        if kind in ("kernel-boot", "container-boot", "product-uuid", "uuid"):
            _known.learn(value.strip().replace("-", ""), found)  # the same id written undashed
    return found


def _as_digest(kind: str, value: str, tally: Tally | None) -> str | None:
    text = value.strip()
    low = text.lower()
    if not text or _DIGESTED.fullmatch(low):
        return None
    if kind in ("machine-id", "id"):
        found = token(low.encode()) if MACHINE_ID.match(low) else ""
        if not found:
            return None
        _count(tally)
        return found if kind == "machine-id" else f"id:{found.removeprefix('machine-id:')}"
    if kind in ("kernel-boot", "container-boot", "product-uuid", "uuid"):
        low = _uuid_text(low)
        if not re.fullmatch(UUID, low) or set(low) <= {"0", "-"} or set(low) <= {"f", "-"}:
            return None
    elif kind == "serial":
        if low in JUNK_SERIALS or len(set(low.replace("-", "").replace(" ", ""))) <= 1:
            return None
    elif kind == "mac":
        digits = set(low) - {":"}
        if digits <= {"0"} or digits <= {"f"} or (len(low) == 17 and int(low[:2], 16) & 1):
            return None  # no address, the broadcast address, or a multicast group
    _count(tally)
    return f"{kind}:{digest(low)}"


def _kept(kind: str, value: str, tally: Tally | None) -> str:
    return as_digest(kind, value, tally) or value


def _value_kind(kind: str, value: str) -> str:
    """The kind of a line's value printed among files of several kinds: told by its shape where it can be."""
    low = value.strip().lower()
    if MACHINE_ID.match(low):
        return "machine-id" if kind == "machine-id" else "id"
    return kind


def _not_a_value(line: str) -> bool:
    """A line that is no file's value: a shell's echo of the command, an error (``cat: ...: Permission denied``)."""
    return len(line) > 64 or line.startswith(("$ ", "[stderr]")) or line.split(":", 1)[0] in PRINTERS


def _line_value(line: str, kind: str, tally: Tally | None, learn: bool = True) -> str:
    """One line of a file of ``kind``: its value digested, the spaces around it kept."""
    body = line.rstrip("\r\n")
    stripped = body.strip()
    if not stripped or (kind == "serial" and _not_a_value(stripped)):
        return line
    for value in _decorated(stripped):  # ``cat -A``'s ``$``, ``nl``'s and ``cat -n``'s line number
        new = as_digest(_value_kind(kind, value), value, tally, learn=learn)
        if new is not None:
            return line.replace(value, new, 1)
    return line


def _decorated(stripped: str) -> tuple[str, ...]:
    """A line's value, and what it may be with what a printer added around it taken away."""
    bare = stripped.removesuffix("$")
    last = bare.rsplit(None, 1)[-1] if bare else bare
    return tuple(dict.fromkeys((stripped, bare, last)))


def _content(text: str, kind: str, tally: Tally | None, learn: bool = True) -> str:
    """Each line of a file of ``kind`` (``learn``: its values are known to be that file's, not one of several's)."""
    return "".join(_line_value(line, kind, tally, learn) for line in text.splitlines(True))


def _path_lines(text: str, tally: Tally | None) -> str:
    """``PATH:VALUE`` lines (grep -H, grep -r) whose path holds an identifier."""

    def one(m: re.Match[str]) -> str:
        kind = file_kind(m.group("path"))
        if kind is None:
            return m.group()
        return f"{m.group('path')}:{_line_value(m.group('value'), kind, tally)}"

    return _PATH_LINE.sub(one, text) if ":" in text else text


def _headed(text: str, tally: Tally | None) -> str:
    """The lines under ``==> PATH <==`` (head, tail of several files), by the file each header names."""
    parts = _HEAD.split(text)
    if len(parts) == 1:
        return text
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        path, body = parts[i], parts[i + 1]
        kind = file_kind(path)
        out.append(f"==> {path} <==")
        out.append(_content(body, kind, tally) if kind else body)
    return "".join(out)


def _labelled(text: str, tally: Tally | None) -> str:
    for pattern, kind in _LABELS:
        text = pattern.sub(lambda m, k=kind: _sub_group(m, k, tally), text)  # type: ignore[misc]
    for pattern in (*SERIAL_PHRASES, *_MORE_SERIALS):
        text = pattern.sub(lambda m: _sub_group(m, "serial", tally), text)
    return text


def _sub_group(m: re.Match[str], kind: str, tally: Tally | None) -> str:
    value = m.group(1)
    if _DIGESTED.match(m.string, m.start(1)):
        return m.group()
    rest = m.string[m.start(1) :].split("\n", 1)[0].strip().strip("\"',;").lower()
    if kind == "serial" and (rest in JUNK_SERIALS or any(rest.startswith(j + " ") for j in JUNK_SERIALS)):
        return m.group()  # "Not Specified", "Default string": the whole value, not its first word
    new = as_digest(kind, value, tally, learn=m.re is not _PROSE)
    if new is None:
        return m.group()
    start, end = m.start(1) - m.start(), m.end(1) - m.start()
    whole = m.group()
    return whole[:start] + new + whole[end:]


def _shape(m: re.Match[str], tally: Tally | None) -> str:
    value = m.group()
    if m.lastgroup == "gpu":
        kind = "mig-uuid" if value[:3].upper() == "MIG" else "gpu-uuid"
        return _kept(kind, value[4:], tally)
    if m.lastgroup == "ib":
        low = value.lower()
        if low[3:11] == "ff:ff:ff":
            return value  # the broadcast address (queue pair 0xffffff)
        return low[:35] + ":" + _kept("mac", low[36:], tally)
    return _kept("mac", value, tally)


def _lone(text: str, tally: Tally | None) -> str:
    def one(m: re.Match[str]) -> str:
        value = m.group(2)
        new = as_digest("id" if "-" not in value else "uuid", value, tally)
        return m.group() if new is None else m.group(1) + new + m.group(3)

    return _LONE.sub(one, text)


def _named_files(argv: Sequence[str]) -> list[str]:
    """The kinds of the identifier files a command that prints files names (``cat /etc/machine-id``)."""
    if not argv or posixpath.basename(argv[0]) not in PRINTERS:
        return []
    return [kind for word in argv[1:] if word.startswith("/") and (kind := file_kind(word))]


def digest_ids(text: str, *, path: str = "", argv: Sequence[str] = (), content: bool = False, tally: Tally | None = None) -> str:
    """``text`` with every identifier it holds as a digest (the same object when there is none).

    ``path``: the file ``text`` is the content of; ``argv``: the command whose output it is (with the paths the
    kernel resolved its words to, where known); ``content``: ``text`` is a file's content or a command's output
    (not a path, a name or a model's words), where a line holding only an id is one."""
    if not argv and len(text) <= 512:
        key = (text, content, file_kind(path), _binary_kind(path), _known.generation()) if path else None
        out, found = _short(text, content, _known.generation()) if key is None else _short_file(key, path)
        if tally is not None and found:
            tally.add("identifier", found)
        return text if out == text else out
    return _long_digest(text, path, tuple(argv), content, tally)


_LONG = TextMemo()
"""A long text's digests, by its path, command and the values known (a digest that learned a value is not kept)."""


def _long_digest(text: str, path: str, argv: tuple[str, ...], content: bool, tally: Tally | None) -> str:
    learned = _known.generation()

    def digest(counted: Tally) -> str:
        return _digest(text, path, argv, content, counted)

    out = _LONG.run((text, path, argv, content, learned), digest, tally, keep=lambda: _known.generation() == learned)
    return text if out == text else out


def _binary_kind(path: str) -> str:
    """``config`` or ``vpd`` for a sysfs PCI configuration space or VPD (whose dumps' serials are zeroed), else ``""``."""
    name = posixpath.basename(path)
    return name if name in ("config", "vpd") and "/sys/" in f"/{path}" else ""


_FILES: dict[tuple[str, bool, str | None, str, int], tuple[str, int]] = {}
"""A short file's digests, by what its path says of it (:func:`file_kind`, :func:`_binary_kind`): all a digest reads
of a path. Sysfs values repeat across files (``0``, ``performance``, a vendor id): each is done once while no value
is learned."""


def _short_file(key: tuple[str, bool, str | None, str, int], path: str) -> tuple[str, int]:
    done = _FILES.get(key)
    if done is None:
        if len(_FILES) >= 16384:
            _FILES.clear()
        tally = Tally()
        done = _FILES[key] = (_digest(key[0], path, (), key[1], tally), tally["identifier"])
    return done


@functools.lru_cache(maxsize=16384)
def _short(text: str, content: bool, generation: int) -> tuple[str, int]:
    """A short text's digests and how many (refs, names and sysfs values repeat: done once while no value is
    learned: ``generation``)."""
    tally = Tally()
    return _digest(text, "", (), content, tally), tally["identifier"]


def _digest(text: str, path: str, argv: Sequence[str], content: bool, tally: Tally | None, depth: int = 0) -> str:
    if depth == 0:
        decoded = _decoded(text, path, argv, content, tally)
        if decoded is not text:
            return decoded
    learned = _known.generation()
    out = _stages(_known_values(text, tally), path, argv, content, tally)
    if _known.generation() != learned:  # a value this text labels may be printed in it again, unlabelled
        out = _known_values(out, tally)
    return text if out == text else out


def _known_values(text: str, tally: Tally | None) -> str:
    out, found = _known.digest_known(text)
    if found and tally is not None:
        tally.add("identifier", found)
    return out


def _decoded(text: str, path: str, argv: Sequence[str], content: bool, tally: Tally | None) -> str:
    """``text`` with its encoded parts (UTF-16, base64, hex dumps) digested as what they decode to (:mod:`._encoded`);
    the same object when none holds an identifier."""

    def inner(part: str) -> str:
        return _digest(part, path, argv, content, tally, depth=1)

    def binary(data: bytes) -> bytes:
        """A dump's bytes that are not text: a PCI configuration space's or VPD's serials zeroed (as share bundles
        and a transcript's file data zero them), and every known value masked."""
        for word in (path, *argv):
            if "/sys/" in f"/{word}" and posixpath.basename(word) in ("config", "vpd"):
                if not word.endswith("vpd"):
                    learn_config(data)
                zeroed = mask_vpd(data)[0] if word.endswith("vpd") else (zero_dsn(data) or (data, False))[0]
                if zeroed != data:
                    data = zeroed
                    if tally is not None:
                        tally.add("identifier")
        return _known.mask_known(data)

    out = _encoded.utf16(text, inner)
    out = _encoded.b64(out, inner)
    if content:
        out = _encoded.hexdump(out, inner, binary)
    if out == text:
        return text
    out = _stages(out, "", (), content, tally)  # the rest: what a file's lines were is said by the decoded parts
    return _known_values(out, tally)


def _stages(text: str, path: str, argv: Sequence[str], content: bool, tally: Tally | None) -> str:
    kind = file_kind(path) if path else None
    if kind is not None:
        text = _content(text, kind, tally)
    named = _named_files(argv)
    if named and not _PATH_LINE.search(text) and not _HEAD.search(text):
        one = len({w for w in argv[1:] if w.startswith("/")}) == 1  # which line is the file's is known: learn it
        text = _content(text, named[0] if len(set(named)) == 1 else "serial" if "serial" in named else "uuid", tally, one)
    if not _QUICK.search(text):
        return text
    out = text
    if _FILE_HINT.search(out):
        out = _headed(_path_lines(out, tally), tally) if "==> " in out else _path_lines(out, tally)
    if _label_hint(out):
        out = _labelled(out, tally)
    if _shape_hint(out):
        out = _SHAPES.sub(lambda m: _shape(m, tally), out)
    if content and _LONE_HINT.search(out):
        out = _lone(out, tally)
    return text if out == text else out


def learn_config(data: bytes) -> None:
    """Each Device Serial Number a PCI configuration space holds, known in the forms it is printed in: as ``lspci
    -vv`` writes it (``Device Serial Number 48-b0-...``: its digest everywhere), and as its two dwords and its 64 bits
    read as numbers (``setpci -s BDF ECAP_DSN+4.l``, ``ECAP_DSN+8.l``)."""
    for serial in dsn_serials(data):
        found = as_digest("serial", "-".join(f"{b:02x}" for b in reversed(serial)))
        if found is None:
            continue
        low, high = int.from_bytes(serial[:4], "little"), int.from_bytes(serial[4:], "little")
        for form in (f"{low:08x}", f"{high:08x}", f"{high:08x}{low:08x}"):
            _known.learn(form, found)


def digest_nvml(function: str, value: Any, tally: Tally | None = None) -> Any:
    """An NVML getter's result with its identifiers digested: a serial (``nvmlDeviceGetSerial``, a ``serial`` key),
    and the shapes any string holds (``nvmlDeviceGetUUID``'s ``GPU-...``)."""
    if isinstance(value, str):
        if "Serial" in function:
            return _kept("serial", value, tally)
        return digest_ids(value, content=True, tally=tally)
    if isinstance(value, dict):
        return {k: digest_nvml("Serial" if "serial" in str(k).lower() else function, v, tally) for k, v in value.items()}
    if isinstance(value, list):
        return [digest_nvml(function, v, tally) for v in value]
    return value
