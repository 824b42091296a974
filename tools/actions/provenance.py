"""A journal can only undo what its apply wrote.

A journal is a file anyone with write access to the state folder could have edited, and rollback
runs as root: it must not become a way to write any path, delete any file or stop any unit.
So an apply records, in its ``session`` entry, the plan it ran (the whole plan, whose hash is the
one every approval is bound to) and the identity of the host: its name and a digest of its
``/etc/machine-id`` (:func:`rigaudit.tools.bench.machine.token`, never the id: journals are attached
to tickets and bundles). A journal written before digests holds the raw id; it still reads, and is
compared by its digest. Rolling back this machine needs a machine id in the journal that is this
machine's (the same name is not enough); a snapshot copy is named by ``--snapshot``.
Before rollback touches anything, :func:`verify_journal` checks that:

- every line is a valid entry (only the last one may be torn, by a kill while it was written);
- the session entry carries a plan whose hash is the recorded one, and the host is that host;
- each change belongs to a step of that plan and is one of that step's targets (a ``persist``
  change is a persist file whose lines are ones that plan's fixes write), and is a kind of target
  an apply can produce at all (:func:`~tools.actions.targets.refusal`);
- each value to restore has the shape a value read from such a target has;
- each outcome points back at a change with the same step and target.

- the file is in this user's custody (it and its folder belong to this user or root, no one else may
  write them, neither is a link: :func:`check_custody`, before the file is read), and every entry
  carries its seal, a keyed MAC chained over the entries under this user's journal key
  (:mod:`~rigaudit.tools.actions.seal`): a plan's hash anyone can recompute, the key only this user
  can read.

Anything else refuses the whole journal with one line. :func:`restore_lines` then lists every
path, value and command the rollback will touch, for the approval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from rigaudit.tools.actions.custody import file_problem
from rigaudit.tools.actions.journal import JournalEntry, JournalRead
from rigaudit.tools.actions.ops import revert_text
from rigaudit.tools.actions.persist import HEADER, persist_lines
from rigaudit.tools.actions.seal import SealError, broken, load_key
from rigaudit.tools.actions.targets import (
    MAX_CONFIG_BYTES,
    AnyTarget,
    ConfigFileTarget,
    ModuleTarget,
    PciRegisterTarget,
    ServiceTarget,
    ValueFileTarget,
    expand,
    refusal,
)
from rigaudit.tools.bench.machine import PRODUCT_UUID, product_digest, token
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.schema.names import one_line
from rigaudit.tools.schema.plan import Plan, PlanStep

PERSIST_STEP = "persist"
_RAW_MACHINE_ID = re.compile(r"machine-id:([0-9a-fA-F]{32})")
"""What a session recorded before digests: the id itself."""
_SERVICE_STATE = re.compile(r"[a-z-]{1,32}")
MAX_BEFORE = 4096


class JournalRefused(UsageError):
    """The journal is not one an apply of this rigaudit wrote for this host; the message is one line."""


_IDS = re.compile(r"(machine-id|product-uuid):([0-9a-f]{16})")


async def host_identity(host: Host) -> str:
    """``machine-id:<digest> product-uuid:<digest>`` of the host (what it shows of its ``/etc/machine-id`` and DMI
    product uuid, :func:`~rigaudit.tools.bench.machine.token`), or ``""`` when it shows neither."""
    machine = token((await host.read("/etc/machine-id")).data)
    product = product_digest((await host.read(PRODUCT_UUID)).data)
    return " ".join(p for p in (machine, f"product-uuid:{product}" if product else "") if p)


def _ids(host_id: str) -> dict[str, str]:
    return dict(_IDS.findall(host_id))


def _short(ids: dict[str, str]) -> str:
    """``machine-id 1a2b3c4d`` (the strongest id known) for people; ``""`` for none."""
    kind = "machine-id" if "machine-id" in ids else "product-uuid" if "product-uuid" in ids else ""
    return f"{kind.replace('-uuid', ' uuid')} {ids[kind][:8]}" if kind else ""


def same_ids(recorded: str, here: str) -> bool | None:
    """The same machine by the strongest id both tokens hold; ``None`` when they share no kind of id."""
    theirs, mine = _ids(recorded), _ids(here)
    kind = next((k for k in ("machine-id", "product-uuid") if k in theirs and k in mine), None)
    return None if kind is None else theirs[kind] == mine[kind]


def recorded_identity(host_id: str) -> str:
    """A session's ``host_id`` in the digest form: a journal written before digests holds the raw id, whose digest
    is the one this machine has now."""
    raw = _RAW_MACHINE_ID.fullmatch(host_id)
    return token(raw.group(1).encode()) if raw is not None else host_id


class SessionFields(TypedDict):
    host: str
    source: str
    host_id: str
    plan_hash: str
    plan: Plan


async def session_fields(host: Host, plan: Plan) -> SessionFields:
    """What an apply records in its journal's ``session`` entry so that rollback can check it."""
    return SessionFields(
        host=host.name, source=host.source, host_id=await host_identity(host), plan_hash=plan.digest(), plan=plan
    )


class Verified(Record):
    """A journal that passed :func:`verify_journal`."""

    session: JournalEntry
    plan: Plan
    warnings: tuple[str, ...]


def _refuse(where: str, why: str) -> JournalRefused:
    return JournalRefused(f"{where}: {one_line(why)}: refusing to roll back a journal rigaudit cannot vouch for")


def _before_problem(target: AnyTarget, before: str | None) -> str | None:
    """Why ``before`` is not a value read from such a target (``None``: it is)."""
    if isinstance(target, ConfigFileTarget):
        if before is not None and (len(before) > MAX_CONFIG_BYTES or "\x00" in before):
            return "the previous content of a persist file is not text of at most 1 MiB"
        return None
    if before is None:
        return "no value to restore"
    if isinstance(target, ValueFileTarget):
        return None if len(before) <= MAX_BEFORE and "\x00" not in before else "the value before is not a kernel value"
    if isinstance(target, PciRegisterTarget):
        return None if re.fullmatch(rf"0x[0-9a-f]{{{2 * target.width}}}", before) else "the register value is not hex"
    if isinstance(target, ModuleTarget):
        return None if before in ("loaded", "absent") else "a module state is loaded or absent"
    assert isinstance(target, ServiceTarget)
    return None if _SERVICE_STATE.fullmatch(before) else "a unit state is one systemctl word"


def _persist_problem(target: AnyTarget, before: str | None, plan: Plan) -> str | None:
    if not isinstance(target, ConfigFileTarget):
        return "a persist change is a configuration file"
    lines = persist_lines([a for step in plan.steps for a in step.actions]).get(target.path)
    if lines is None:
        return f"the plan persists nothing into {target.path}"
    allowed = {*lines, *HEADER.splitlines(), *(before or "").splitlines(), ""}
    extra = [line for line in target.content.splitlines() if line not in allowed]
    return f"{target.path} gains a line the plan does not write: {extra[0][:80]!r}" if extra else None


def _change_problem(entry: JournalEntry, steps: dict[str, PlanStep], plan: Plan) -> str | None:
    target = entry.target
    if target is None:
        return "a change without a target"
    why = refusal(target)
    if why is not None:
        return why
    if entry.step_id == PERSIST_STEP:
        problem = _persist_problem(target, entry.before, plan)
    elif entry.step_id not in steps:
        problem = f"step {entry.step_id!r} is not in the journal's plan"
    elif target not in expand_step(steps[entry.step_id]):
        problem = f"{target.describe()} is not a target of step {entry.step_id}"
    else:
        problem = None
    return problem or (_before_problem(target, entry.before) if entry.state == "planned" else None)


def expand_step(step: PlanStep) -> list[AnyTarget]:
    return [t for action in step.actions for t in expand(action)]


def verify_journal(read: JournalRead, *, host_name: str, host_id: str, live: bool = True) -> Verified:
    """Check a journal as this module's docstring says; :class:`JournalRefused` with one line otherwise. ``live``:
    the host is this machine, which only a machine id the journal recorded can prove (else a snapshot copy)."""
    where = str(read.path)
    if read.damaged and read.damaged != [read.last_line]:
        first = next(n for n in read.damaged if n != read.last_line)
        raise _refuse(f"{where}:{first}", "a damaged or invalid line")
    entries = read.entries
    sessions = [e for e in entries if e.kind == "session"]
    if not entries or entries[0].kind != "session" or len(sessions) != 1:
        raise _refuse(where, "it does not open with exactly one session entry")
    session = sessions[0]
    if session.plan is None:
        raise _refuse(where, "its session records no plan (written by an older rigaudit? undo by hand with its revert lines)")
    if session.plan.digest() != session.plan_hash:
        raise _refuse(where, f"its plan does not have the recorded hash {session.plan_hash!r}")
    if session.host != host_name:
        raise _refuse(where, f"it was written on {session.host!r}, not {host_name!r}")
    recorded = recorded_identity(session.host_id)
    if live and not _ids(recorded):
        raise _refuse(
            where,
            "it records no machine identity (machine-id or product uuid), so nothing proves it was written on this "
            "machine (undo by hand with its revert lines)",
        )
    same = same_ids(recorded, host_id) if _ids(recorded) else True
    if same is False or (same is None and live):
        mine = _short(_ids(host_id)) or "one without a machine-id or product uuid"
        theirs = _short(_ids(recorded)) or "another machine"
        raise _refuse(where, f"it was written on {theirs}, this is {mine}")
    seqs = [e.seq for e in entries]
    if len(set(seqs)) != len(seqs):
        raise _refuse(where, "two entries share a sequence number")
    steps = {s.id: s for s in session.plan.steps}
    planned: dict[int, JournalEntry] = {}
    for entry in entries:
        if entry.kind == "approval" and entry.plan_hash and entry.plan_hash != session.plan_hash:
            raise _refuse(f"{where} entry {entry.seq}", "an approval bound to another plan")
        if entry.kind != "change":
            continue
        if entry.state == "planned":
            problem = _change_problem(entry, steps, session.plan)
            if problem is not None:
                raise _refuse(f"{where} entry {entry.seq}", problem)
            planned[entry.seq] = entry
            continue
        origin = planned.get(entry.ref) if entry.ref is not None else None
        if origin is None or origin.target != entry.target or origin.step_id != entry.step_id:
            raise _refuse(f"{where} entry {entry.seq}", "an outcome that matches no earlier change")
    return Verified(session, session.plan, tuple(read.warnings))


def check_custody(path: Path) -> None:
    """Refuse (one line) a journal someone other than this user or root could have written or swapped, before it
    is read; a path that is not there is left to the reader to say so."""
    if not (path.exists() or path.is_symlink()):
        return
    problem = file_problem(path)
    if problem is not None:
        raise _refuse(str(path), problem)


def check_seal(read: JournalRead) -> None:
    """Refuse (one line) a journal whose entries do not carry their seals under this user's journal key."""
    try:
        key = load_key(create=False)
    except SealError as exc:
        raise _refuse(str(read.path), str(exc)) from None
    why = broken(key, [(e.seq, e.seal, d) for e, d in zip(read.entries, read.digests, strict=True)])
    if why is not None:
        raise _refuse(str(read.path), why)


def restore_lines(changes: Sequence[tuple[AnyTarget, str | None]]) -> list[str]:
    """Every path, value and command a rollback of ``changes`` (newest first) touches, one per line."""
    out: list[str] = []
    for target, before in changes:
        if isinstance(target, ValueFileTarget):
            out.append(f"write {one_line(repr(before))} to {target.path}")
        elif isinstance(target, ConfigFileTarget):
            if before is None:
                out.append(f"remove {target.path}")
            else:
                lines = before.splitlines()
                out.append(f"write {len(lines)} line(s) back to {target.path}:")
                out += [f"    {one_line(line)}" for line in lines]
        else:
            out.append(revert_text(target, before))
    return out


__all__ = [
    "PERSIST_STEP",
    "JournalRefused",
    "SessionFields",
    "Verified",
    "check_custody",
    "check_seal",
    "host_identity",
    "recorded_identity",
    "restore_lines",
    "same_ids",
    "session_fields",
    "verify_journal",
]
