"""The GPUs Slurm promises for this node: ``Gres=gpu[:type]:N`` on its ``NodeName`` line of slurm.conf, else the
``Name=gpu`` lines of gres.conf that apply to it (``Count=``, else the files ``File=`` names).

slurm.conf is ``$SLURM_CONF`` (as Slurm's own commands find it), else ``/etc/slurm/slurm.conf``; gres.conf lies
beside it. The node is ``$SLURMD_NODENAME`` (what slurmd gives its HealthCheckProgram, Prolog and Epilog), else
the short host name. What cannot be read is one line in :attr:`SlurmGres.error`, never an exception.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

from rigaudit.tools.core.record import Record

DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
MAX_CONF_BYTES = 1024 * 1024
MAX_EXPANDED = 4096
"""Names one host list may expand to (``gpu[0-999999]`` is refused, not walked)."""
MAX_NAME = 1024
"""Characters of one name of a host list, its ranges written out (each name it expands to is no longer)."""
_COUNT = r"[0-9]{1,9}"
_BRACKET = r"\[([^\]]*)\]"
_RANGE = r"^([0-9]{1,9})(?:-([0-9]{1,9}))?$"


class GresPromise(Record):
    """What Slurm says this node holds."""

    count: int
    type: str | None
    """The GRES type when every GPU entry names the same one (``h200`` of ``gpu:h200:8``)."""
    source: str
    """Where the promise was read (``slurm.conf NodeName=n1 Gres=gpu:h200:8``)."""


class SlurmGres(Record):
    node: str
    promise: GresPromise | None = None
    """``None``: Slurm promises this node no GPU, or (with :attr:`error`) could not be read."""
    error: str | None = None


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list (``gpu[01-04,07],login1``) as names; :class:`ValueError` past :data:`MAX_EXPANDED`."""
    names: list[str] = []
    for part in _split_top(text):
        names.extend(_expand_one(part))
        if len(names) > MAX_EXPANDED:
            raise ValueError(f"host list {text[:40]!r} names more than {MAX_EXPANDED} nodes")
    return names


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p for p in (*parts, current) if p]


def _range(item: str) -> list[str]:
    bounds = re.match(_RANGE, item.strip())
    if bounds is None:
        raise ValueError(f"not a host range: [{item[:40]}]")
    low, high = bounds.group(1), bounds.group(2) or bounds.group(1)
    if int(high) - int(low) > MAX_EXPANDED:
        raise ValueError(f"host range [{item[:40]}] is too long")
    return [f"{n:0{len(low)}d}" for n in range(int(low), int(high) + 1)]


def _expand_one(name: str) -> list[str]:
    """One name of a host list, its ranges multiplied out (``n[1-2]x[1-2]``: four), each range in turn."""
    if len(name) > MAX_NAME:
        raise ValueError(f"host name {name[:40]!r}... is longer than {MAX_NAME} characters")
    names, done = [""], 0
    for match in re.finditer(_BRACKET, name):
        found = [n for item in match.group(1).split(",") for n in _range(item)]
        if len(names) * len(found) > MAX_EXPANDED:
            raise ValueError(f"host list {name[:40]!r} names more than {MAX_EXPANDED} nodes")
        names = [f"{n}{name[done : match.start()]}{f}" for n in names for f in found]
        done = match.end()
    return [n + name[done:] for n in names]


def _lines(text: str) -> Iterable[dict[str, str]]:
    """Each configuration line as its ``Key=Value`` pairs (keys lower-cased; ``#`` comments and ``\\`` joins)."""
    for raw in text.replace("\\\n", " ").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            yield {k.lower(): v for k, _, v in (w.partition("=") for w in line.split()) if v}


def _applies(pairs: Mapping[str, str], node: str) -> bool:
    return "nodename" not in pairs or node in expand_hostlist(pairs["nodename"])


def _from_gres_value(value: str) -> list[tuple[str | None, int]]:
    """``gpu:h200:8,gpu:a100:2(S:0),shard:4`` -> the GPU entries' (type, count)."""
    found = []
    for entry in _split_top(value):
        parts = entry.split("(", 1)[0].split(":")
        if parts[0] != "gpu":
            continue
        count_text = parts[-1] if len(parts) > 1 else "1"
        kind = parts[1] if len(parts) == 3 else None
        if len(parts) == 2 and not count_text[:1].isdigit():
            kind, count_text = parts[1], "1"
        found.append((kind, _count(count_text)))
    return found


def _count(text: str) -> int:
    """``8``, ``2K`` (Slurm's suffixes) -> a number."""
    scale = {"k": 1024, "m": 1024**2, "g": 1024**3}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not re.fullmatch(_COUNT, digits):  # int() also takes non-ASCII digits, and 5,000 of them is an error
        raise ValueError(f"not a GRES count: {text[:40]!r}")
    return int(digits) * scale


def _promise(entries: list[tuple[str | None, int]], source: str) -> GresPromise | None:
    total = sum(n for _, n in entries)
    if not total:
        return None
    kinds = {k for k, _ in entries}
    return GresPromise(total, kinds.pop() if len(kinds) == 1 else None, source)


def _slurm_conf_promise(text: str, node: str) -> GresPromise | None:
    default = ""
    for pairs in _lines(text):
        if "nodename" not in pairs:
            continue
        if pairs["nodename"].upper() == "DEFAULT":
            default = pairs.get("gres", default)
            continue
        if node in expand_hostlist(pairs["nodename"]):
            value = pairs.get("gres", default)
            return _promise(_from_gres_value(value), f"slurm.conf NodeName={pairs['nodename']} Gres={value}")
    return None


def _gres_conf_promise(text: str, node: str) -> GresPromise | None:
    entries: list[tuple[str | None, int]] = []
    shown: list[str] = []
    for pairs in _lines(text):
        if pairs.get("name") != "gpu" or not _applies(pairs, node):
            continue
        if "count" in pairs:
            count = _count(pairs["count"])
        elif "file" in pairs or "multiple_files" in pairs:
            count = len(expand_hostlist(pairs.get("file") or pairs["multiple_files"]))
        else:
            count = 1
        entries.append((pairs.get("type"), count))
        shown.append(" ".join(f"{k}={v}" for k, v in pairs.items() if k in ("type", "count", "file")))
    return _promise(entries, "gres.conf " + "; ".join(shown))


def _read(path: Path) -> str:
    from rigaudit.tools.files.bounded import read_regular

    return read_regular(path, limit=MAX_CONF_BYTES, what=str(path)).decode("utf-8", "replace")


def node_name(environ: Mapping[str, str]) -> str:
    return environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def slurm_conf_path(environ: Mapping[str, str], *, live: bool) -> Path | None:
    """``$SLURM_CONF``, else (on the live host) /etc/slurm/slurm.conf when it exists; else no Slurm to ask."""
    if environ.get("SLURM_CONF"):
        return Path(environ["SLURM_CONF"])
    return DEFAULT_CONF if live and DEFAULT_CONF.exists() else None


def read_slurm_gres(conf: Path, node: str) -> SlurmGres:
    """This node's GPU promise from ``conf`` and the gres.conf beside it."""
    from rigaudit.tools.files.bounded import InputError

    try:
        promise = _slurm_conf_promise(_read(conf), node)
        gres = conf.parent / "gres.conf"
        if promise is None and gres.exists():
            promise = _gres_conf_promise(_read(gres), node)
    except (InputError, ValueError) as exc:
        return SlurmGres(node, error=str(exc))
    return SlurmGres(node, promise)


def load(environ: Mapping[str, str] | None = None, *, live: bool) -> SlurmGres | None:
    """The promise of the Slurm configuration the environment names, or ``None`` when no Slurm is configured."""
    env = os.environ if environ is None else environ
    conf = slurm_conf_path(env, live=live)
    return None if conf is None else read_slurm_gres(conf, node_name(env))


__all__ = ["GresPromise", "SlurmGres", "expand_hostlist", "load", "read_slurm_gres"]
