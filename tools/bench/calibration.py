"""The between-session noise of one host and workload, measured once (A/A sessions) and used by every compare.

``bench calibrate`` runs (or reads) K sessions of one configuration; per level and metric an
ANOVA of the sessions splits the noise into the part repeats see (within a session) and the part
only a new session sees (between sessions: a new process, new connections, the server's state, a
drift over tens of seconds). ``bench compare`` of single sessions then adds the between-session
part to its intervals, with the calibration's degrees of freedom (:mod:`rigaudit.tools.bench.sessions`).

A calibration is keyed by the workload's identity (:func:`rigaudit.tools.bench.like.identity`:
model, URL, API, tokens, levels, requests per run, tool version) and the machine the load came from
(the digest of its ``/etc/machine-id`` that results record, :mod:`rigaudit.tools.bench.machine`) and,
inside a container, the container (a digest of the engine's id: containers of one image share the
machine-id baked into it), and stored as ``$XDG_STATE_HOME/rigaudit/calibrations/<key>.json`` (newest
wins). Two machines of one name (containers, cloned VMs, "localhost") keep apart, and so do two
containers of one image, on one host or two; a renamed host keeps its own, a restarted container
too. A calibration is found for a result only when they are known to be one machine and container:
a calibration from before containers were recorded gets none for a result from inside one; a
container whose id cannot be read is known by the kernel's boot id (until a reboot, and like any
container of its image on that host; without a boot id it gets none), which ``bench calibrate`` says
when it stores one and ``bench compare`` when it finds one (:func:`container_warning`; ``bench compare
--calibration FILE`` can always name one). A machine without
a machine-id is keyed by its host name, which :attr:`Found.warning` says; so were calibrations before
machine ids: such a file still reads, and moves to the machine's key when a result with an id finds
it. The files are untrusted input when read back: bounded, validated, numbers finite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from rigaudit.tools.bench.errors import BenchInputError, validated
from rigaudit.tools.bench.like import WorkloadMismatch, differences, host_text, identity, identity_differences, same_host
from rigaudit.tools.bench.machine import (
    CONTAINER_NONE,
    CONTAINER_PATTERN,
    container_text,
    same_container,
    shared_by_siblings,
    short,
)
from rigaudit.tools.bench.results import BenchResult, Run, host_name
from rigaudit.tools.bench.sessions import Between, MeanSquares, anova, log_sessions
from rigaudit.tools.core.record import Record
from rigaudit.tools.files.atomic import atomic_write_text
from rigaudit.tools.files.bounded import InputError, load_json

CALIBRATION_SCHEMA = "rigaudit.calibration/1"
MAX_CALIBRATION_BYTES = 4 * 1024 * 1024
MAX_SESSIONS = 1000
METRICS = ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50")
STALE_DAYS = 30
"""A calibration older than this is still used, with a warning: machines and servers change."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, allow_inf_nan=False)


class Component(_Model):
    """One level and metric: the ANOVA of the calibration's sessions (log scale)."""

    concurrency: int = Field(ge=0)
    metric: str
    ms_between: NonNegativeFloat
    ms_within: NonNegativeFloat
    df_between: PositiveInt
    df_within: PositiveInt
    n0: PositiveFloat
    session_means: list[PositiveFloat] = Field(default_factory=list, max_length=MAX_SESSIONS)
    """Each session's geometric mean, in the order the sessions ran (for people; not used to judge)."""

    @property
    def squares(self) -> MeanSquares:
        return MeanSquares(self.ms_between, self.ms_within, self.df_between, self.df_within, self.n0)

    @property
    def between_sd(self) -> float:
        """sigma_B: the session-to-session spread (log scale, about the session CV); 0 when not measurable."""
        return math.sqrt(self.squares.component)

    @property
    def within_sd(self) -> float:
        return math.sqrt(self.ms_within)


class Calibration(_Model):
    schema_: str = Field(default=CALIBRATION_SCHEMA, alias="schema")
    created_at: str
    host: str
    host_id: str = Field(default="", pattern=r"^(machine-id:[0-9a-f]{16})?$")
    """The machine (:mod:`rigaudit.tools.bench.machine`); ``""``: keyed by ``host`` alone (no machine-id known)."""
    container: str = Field(default="", pattern=rf"^({CONTAINER_PATTERN})?$")
    """The container its sessions ran in (:func:`~rigaudit.tools.bench.machine.container_token`); ``""``: not recorded."""
    workload: dict[str, str]
    """The identity of the workload (:func:`~rigaudit.tools.bench.like.identity`)."""
    sessions: PositiveInt
    repeats: list[PositiveInt] = Field(default_factory=list, max_length=MAX_SESSIONS)
    """Repeats per session (per level, the most a session ran)."""
    sources: list[str] = Field(default_factory=list, max_length=MAX_SESSIONS)
    """The result files read, or ``session N`` for sessions it ran."""
    components: list[Component] = Field(default_factory=list, max_length=10_000)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    def component(self, concurrency: int, metric: str) -> Component | None:
        return next((c for c in self.components if c.concurrency == concurrency and c.metric == metric), None)

    def between(self, concurrency: int, metric: str) -> Between | None:
        found = self.component(concurrency, metric)
        return Between("calibrated", found.squares) if found is not None else None

    def headline_cv(self) -> dict[int, float]:
        """The between-session spread of output tok/s per level."""
        return {c.concurrency: c.between_sd for c in self.components if c.metric == METRICS[0]}

    def age_days(self, now: datetime | None = None) -> float | None:
        try:
            made = datetime.fromisoformat(self.created_at)
        except ValueError:
            return None
        if made.tzinfo is None:
            made = made.replace(tzinfo=timezone.utc)
        return ((now or datetime.now(timezone.utc)) - made).total_seconds() / 86400.0

    def describe(self) -> str:
        """``calibrated 2026-12-01 11:40 UTC on h200-1 from 6 sessions of 5 repeats: session CV 6.4% at c=4, ...``."""
        cvs = ", ".join(f"{cv:.1%} at c={c}" for c, cv in sorted(self.headline_cv().items()))
        repeats = "/".join(str(n) for n in sorted(set(self.repeats))) or "?"
        made = _when(self.created_at)
        where = host_text(self.host, self.host_id or None, self.container)
        return f"calibrated {made} on {where} from {self.sessions} sessions of {repeats} repeats: session CV {cvs}"

    @property
    def host_key(self) -> str:
        """What its file is keyed by: the machine (else the host name), and the container inside one."""
        return place(self.host_id or self.host, self.container)


def place(host_key: str, container: str | None) -> str:
    """The machine's key, with the container where there is one (a file outside containers keeps its old key)."""
    return host_key if container in (None, "", CONTAINER_NONE) else f"{host_key} {container}"


def _when(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return stamp


def _values(runs: Sequence[Run], metric: str) -> list[float]:
    values = []
    for run in sorted(runs, key=lambda r: r.repeat):
        value = getattr(run, metric)
        if isinstance(value, (int, float)) and value > 0 and math.isfinite(value):
            values.append(float(value))
    return values


def _one_configuration(results: Sequence[BenchResult], sources: Sequence[str]) -> str:
    """The one container every session ran in; BenchInputError (or WorkloadMismatch) when they are not sessions of
    one configuration, or too few or too many."""
    if len(results) < 2:
        raise BenchInputError("a calibration needs at least 2 sessions of one configuration (6 or more are better)")
    if len(results) > MAX_SESSIONS:
        raise BenchInputError(f"a calibration reads at most {MAX_SESSIONS} sessions")
    for index, result in enumerate(results[1:], start=2):
        found = differences(results[0], result)
        if found:
            raise WorkloadMismatch([f"session {index} ({sources[index - 1]}): {d}" for d in found])
    containers = {r.container or "" for r in results}
    if len(containers) > 1:
        shown = ", ".join(sorted(container_text(c) or "not recorded" for c in containers))
        raise BenchInputError(f"these sessions ran in different containers ({shown}): calibrate the sessions of one")
    return containers.pop()


def _components(results: Sequence[BenchResult], levels: list[int]) -> list[Component]:
    """The between- and within-session mean squares of each level and metric that has enough figures."""
    components = []
    for concurrency in levels:
        for metric in METRICS:
            per_session = [_values([r for r in res.runs if r.concurrency == concurrency], metric) for res in results]
            logs = log_sessions(per_session)
            squares = anova(logs)
            if squares is None:
                continue
            means = [math.exp(math.fsum(s) / len(s)) for s in logs]
            components.append(
                Component(
                    concurrency=concurrency,
                    metric=metric,
                    ms_between=squares.between,
                    ms_within=squares.within,
                    df_between=squares.df_between,
                    df_within=squares.df_within,
                    n0=squares.n0,
                    session_means=means,
                )
            )
    return components


def calibrate(
    results: Sequence[BenchResult], *, sources: Sequence[str], host: str | None = None, host_id: str | None = None
) -> Calibration:
    """The calibration of these sessions of one configuration; BenchInputError when they cannot make one.

    Its machine: ``host_id``, else the one every session records (sessions of several machines are refused
    as different workloads), else none (keyed by host name); its container: the one every session records
    (sessions of several containers are refused)."""
    container = _one_configuration(results, sources)
    hosts = {r.host for r in results if r.host}
    where = host or (hosts.pop() if len(hosts) == 1 else host_name())
    machines = {r.host_id for r in results}
    machine = host_id if host_id is not None else (machines.pop() or "" if len(machines) == 1 else "")
    levels = sorted({r.concurrency for r in results[0].runs})
    components = _components(results, levels)
    if not any(c.metric == METRICS[0] for c in components):
        raise BenchInputError(
            "these sessions cannot be calibrated: output tok/s needs at least 2 sessions with a figure and a "
            "session with 2 repeats or more (run bench inference with --repeat 3 or more)"
        )
    repeats = [max((sum(1 for r in res.runs if r.concurrency == c) for c in levels), default=0) or 1 for res in results]
    return Calibration(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        host=where,
        host_id=machine,
        container=container,
        workload=identity(results[0]),
        sessions=len(results),
        repeats=repeats,
        sources=list(sources),
        components=components,
    )


# --- where calibrations live -----------------------------------------------------------------------------


def calibrations_dir() -> Path:
    """``$XDG_STATE_HOME/rigaudit/calibrations`` (when absolute), else ``~/.local/state/rigaudit/calibrations``."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "rigaudit" / "calibrations"


def key(workload: dict[str, str], host: str) -> str:
    """A file name for a machine (or, without a machine-id, a host name) and workload: 16 hex digits of their SHA-256."""
    text = json.dumps({"host": host, "workload": workload}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def save(calibration: Calibration, directory: Path | None = None) -> Path:
    """Store it where ``compare`` looks (replacing an older calibration of the same machine and workload)."""
    folder = directory or calibrations_dir()
    path = folder / f"{key(calibration.workload, calibration.host_key)}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, calibration.to_json() + "\n")
    except OSError as exc:
        raise BenchInputError(f"cannot store the calibration in {folder}: {exc.strerror or exc}") from None
    return path


def load_calibration(path: Path) -> Calibration:
    """Read a calibration file; one clear InputError or BenchInputError when it is not one."""
    raw = load_json(path, limit=MAX_CALIBRATION_BYTES)  # InputError (one line) when it cannot be read
    if not isinstance(raw, dict) or raw.get("schema") != CALIBRATION_SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise BenchInputError(f"{path} is not a {CALIBRATION_SCHEMA} file (schema: {found!r})")
    return validated(Calibration, raw, path)


def _host(result: BenchResult) -> str:
    return result.host or host_name()


def mismatch(calibration: Calibration, result: BenchResult) -> list[str]:
    """How ``result`` differs from the workload and machine the calibration measured (empty: it applies).

    The machine by machine-id digest when both know it (a renamed host is still itself); else by host name; and
    the container, when both are known to be different ones (see :func:`applies` for one that cannot tell)."""
    found = identity_differences(calibration.workload, identity(result))
    if not same_host(calibration.host, _host(result), calibration.host_id or None, result.host_id):
        found.append(f"host {host_text(calibration.host, calibration.host_id)} vs {host_text(_host(result), result.host_id)}")
    elif same_container(calibration.container, result.container) is False:
        where = short(result.host_id or "") or _host(result)
        found.append(f"{container_text(calibration.container)} vs {container_text(result.container)} on {where}")
    return found


def applies(calibration: Calibration, result: BenchResult) -> bool:
    """The calibration is of this result's workload, machine and container, known to be (a stored one is used only so)."""
    return not mismatch(calibration, result) and same_container(calibration.container, result.container) is True


_NO_ID = (
    "these sessions ran in a container whose id rigaudit cannot read (no engine id in /proc/self/mountinfo, "
    "its cgroup or /run/.containerenv), and another container of the same image would share its machine-id"
)


def container_warning(calibration: Calibration) -> str | None:
    """The one line said when a calibration's container limits how it is found (a container that shows no id)."""
    if shared_by_siblings(calibration.container):
        return (
            f"{_NO_ID}: bench compare finds this calibration by the machine-id and the kernel's boot id, so only "
            "until the host reboots, and in any container of the image on this host; after a reboot name it with "
            "bench compare --calibration FILE"
        )
    if same_container(calibration.container, calibration.container) is True:
        return None
    return f"{_NO_ID}: bench compare does not pick this calibration up by itself; name it with bench compare --calibration FILE"


def by_name_warning(name: str, why: str) -> str:
    """The one line said whenever a calibration is keyed by a host name."""
    return (
        f"{why}: the calibration is keyed by the host name {name!r}, which other machines of that name "
        "(containers, cloned VMs, localhost) share and a rename loses"
    )


class Found(Record):
    """A stored calibration that applies to a result, and what to say about how it was found."""

    calibration: Calibration
    path: Path
    warning: str | None = None
    """One line: found by host name only, by the kernel's boot id only, or moved from its host-name key to the machine's."""


def _sibling_warning(result: BenchResult) -> str | None:
    if not shared_by_siblings(result.container):
        return None
    return (
        "the calibration was found by the machine-id and the kernel's boot id only (this container shows no id): "
        "another container of the same image on this host would have found it too"
    )


def _read(path: Path) -> Calibration | None:
    return load_calibration(path) if path.is_file() else None


def _migrate(old: Calibration, old_path: Path, host_id: str, folder: Path) -> Found:
    """A calibration stored by host name, claimed by the machine a result with a machine-id came from."""
    moved = old.model_copy(update={"host_id": host_id})
    claimed = (
        f"the calibration {old_path.name}, keyed by the host name {old.host!r} (before machine ids), "
        f"now belongs to {short(host_id)}"
    )
    try:
        path = save(moved, folder)
    except BenchInputError as exc:  # a read-only store: use it where it is, and say so
        return Found(moved, old_path, f"{claimed}, but it could not be moved ({exc}): used where it is")
    with contextlib.suppress(OSError):  # left behind: the copy under the machine's key is found first from now on
        old_path.unlink()
    return Found(moved, path, f"{claimed}: moved to {path.name}")


def find(result: BenchResult, directory: Path | None = None) -> Found | None:
    """The stored calibration of this result's machine and workload, if there is one that reads and applies.

    A result with a machine-id looks under the machine's key, then under its host name's (a calibration stored
    before machine ids, or from results without one: moved to the machine's key when it applies); a result
    without one looks under its host name, said in :attr:`Found.warning`."""
    folder = directory or calibrations_dir()
    workload, name = identity(result), _host(result)
    if result.host_id:
        path = folder / f"{key(workload, place(result.host_id, result.container))}.json"
        mine = _read(path)
        if mine is not None and applies(mine, result):
            return Found(mine, path, _sibling_warning(result))
        old_path = folder / f"{key(workload, name)}.json"
        old = _read(old_path)
        if old is not None and not old.host_id and applies(old, result):
            return _migrate(old, old_path, result.host_id, folder)
        return None
    path = folder / f"{key(workload, place(name, result.container))}.json"
    found = _read(path)
    if found is None or not applies(found, result):
        return None
    why = "the results record no machine-id (written before rigaudit recorded one, or on a host without /etc/machine-id)"
    return Found(found, path, by_name_warning(name, why))


MAX_STORED = 1000


def stored(directory: Path | None = None) -> list[tuple[Path, Calibration | str]]:
    """Every stored calibration (newest first), or why one cannot be read; at most :data:`MAX_STORED`."""
    folder = directory or calibrations_dir()
    try:
        paths = sorted((p for p in folder.iterdir() if p.suffix == ".json"), key=lambda p: p.name)[:MAX_STORED]
    except OSError:
        return []
    found: list[tuple[Path, Calibration | str]] = []
    for path in paths:
        try:
            found.append((path, load_calibration(path)))
        except (BenchInputError, InputError) as exc:
            found.append((path, str(exc)))
    return sorted(found, key=lambda item: item[1].created_at if isinstance(item[1], Calibration) else "", reverse=True)
