"""Only like with like: the workload two benchmark results must share before their figures are compared.

Two results measure the same thing only when the same tool sent the same requests to the same
server: model, URL, API, max and prompt tokens, the concurrency levels, the requests per run, the
tool's version (and, for external benchmarks, the command), from the same machine when both record
it (by machine-id digest, else by name). Anything else is a different experiment, and a comparison
of its figures says nothing about a fix. The same identity keys a calibration of the between-session noise
(:mod:`rigaudit.tools.bench.calibration`).
"""

from __future__ import annotations

from collections.abc import Callable

from rigaudit.tools.bench.errors import BenchInputError
from rigaudit.tools.bench.machine import container_text, short
from rigaudit.tools.bench.results import BenchResult


class WorkloadMismatch(BenchInputError):
    """The two results ran different workloads; ``differences`` says how."""

    def __init__(self, differences: list[str]) -> None:
        super().__init__(
            "not like with like: " + "; ".join(differences) + " (compare runs of the same workload, or pass --allow-different)"
        )
        self.differences = differences


def _url(result: BenchResult) -> str | None:
    if result.base_url is None:
        return None
    return result.base_url.rstrip("/").removesuffix("/v1")


def _levels(result: BenchResult) -> str:
    return ",".join(str(c) for c in sorted({r.concurrency for r in result.runs})) or "none"


def _requests(result: BenchResult) -> str:
    counts: dict[int, set[int]] = {}
    for run in result.runs:
        counts.setdefault(run.concurrency, set()).add(run.requests)
    return " ".join(f"c={c}:{'/'.join(map(str, sorted(n)))}" for c, n in sorted(counts.items())) or "none"


_FIELDS: tuple[tuple[str, Callable[[BenchResult], object]], ...] = (
    ("model", lambda r: r.model),
    ("URL", _url),
    ("API", lambda r: r.api),
    ("max tokens", lambda r: r.max_tokens),
    ("prompt tokens", lambda r: r.prompt_tokens),
    ("ignore_eos", lambda r: r.ignore_eos),
    ("concurrency levels", _levels),
    ("requests per run", _requests),
    ("tool", lambda r: r.tool),
    ("external command", lambda r: r.command),
)


def _show(value: object) -> str:
    return "not recorded" if value is None else str(value)


def identity(result: BenchResult) -> dict[str, str]:
    """The workload as ``{part: shown value}`` (``"not recorded"`` for what the result does not say)."""
    return {name: _show(read(result)) for name, read in _FIELDS}


def identity_differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """``"max tokens 128 vs 64"`` for every part of two identities that differs."""
    names = [name for name, _ in _FIELDS] + sorted((set(before) | set(after)) - {name for name, _ in _FIELDS})
    missing = _show(None)
    return [
        f"{name} {before.get(name, missing)} vs {after.get(name, missing)}"
        for name in names
        if before.get(name, missing) != after.get(name, missing)
    ]


def same_host(a: str | None, b: str | None, a_id: str | None = None, b_id: str | None = None) -> bool:
    """The same machine: by machine-id digest when both record one (a renamed host is still itself, two hosts of
    one name are not), else by name; hosts are told apart only when both are recorded (results before 0.2 do
    not name theirs)."""
    if a_id and b_id:
        return a_id == b_id
    return a is None or b is None or a == b


def host_text(name: str | None, host_id: str | None, container: str | None = None) -> str:
    """``gpu01 (machine-id 1a2b3c4d, container 5e6f7a8b)``, or what is known of it, or the name alone."""
    known = [part for part in (short(host_id) if host_id else "", container_text(container)) if part]
    return f"{name or 'unnamed'} ({', '.join(known)})" if known else str(name)


def differences(base: BenchResult, new: BenchResult) -> list[str]:
    """``"max tokens 128 vs 64"`` for every part of the workload that differs (empty: like with like)."""
    found = identity_differences(identity(base), identity(new))
    if not same_host(base.host, new.host, base.host_id, new.host_id):
        found.append(f"host {host_text(base.host, base.host_id)} vs {host_text(new.host, new.host_id)}")
    if base.gpus and new.gpus and _gpus(base) != _gpus(new):
        found.append(f"GPUs {_gpus(base)} vs {_gpus(new)}")
    return found


def _gpus(result: BenchResult) -> str:
    """``2 x NVIDIA H200 (1a2b..., 3c4d...)``: the boards by name and UUID digest."""
    gpus = result.gpus or []
    names = sorted({g.name for g in gpus})
    return f"{len(gpus)} x {'/'.join(names)} ({', '.join(g.uuid_digest[:8] for g in gpus)})"
