"""runtime.nofile and runtime.nproc: the open-file and process limits of the inference server's processes."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.proc_info import Limit, parse_limits, status_threads, status_uid
from rigaudit.agents.facts.processes import ServerProcess, ServerScan
from rigaudit.agents.facts.rootless import read_rootless
from rigaudit.agents.investigators.runtime import premises
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity, Where

NOFILE_MIN = 65536
NOFILE_LOW = 4096
NPROC_MIN = 4096
FILE_NR = "/proc/sys/fs/file-nr"
_NOFILE, _NPROC = "Max open files", "Max processes"


class ServerLimits(Record):
    server: ServerProcess
    limits: dict[str, Limit] | None
    """None when /proc/PID/limits could not be read."""
    error: str | None
    uid: int | None
    threads: int | None


class LimitsFacts(Record):
    platform: Platform
    servers: tuple[ServerLimits, ...]
    searched: str
    file_nr: tuple[int, int] | None
    """(allocated, max) file handles of the whole system, from /proc/sys/fs/file-nr."""
    root_host_uid: int | None = None
    """The host uid this container's root is (a rootless or user-namespaced container); None: root is root."""


def _file_nr(text: str | None) -> tuple[int, int] | None:
    fields = (text or "").split()
    if len(fields) == 3 and all(f.isdecimal() for f in fields):
        return int(fields[0]), int(fields[2])
    return None


async def collect_limits(probe: Probe, scan: ServerScan, platform: Platform) -> LimitsFacts:
    servers = scan.servers[:16]
    limits = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/limits") for s in servers])
    status = await probe.gather(*[lambda s=s: probe.text(f"/proc/{s.pid}/status") for s in servers])
    file_nr = await probe.text(FILE_NR)
    rows = tuple(
        ServerLimits(s, parse_limits(r.text()) if r.ok else None, r.error, status_uid(st), status_threads(st))
        for s, r, st in zip(servers, limits, status, strict=True)
    )
    rootless = await read_rootless(probe, platform)
    return LimitsFacts(platform, rows, scan.searched, _file_nr(file_nr), rootless.host_uid)


def _where(f: LimitsFacts, server: ServerProcess) -> Where:
    """A container's limits are its runtime options (docker --ulimit, the LXC config); a host server's, its unit."""
    inside = f.platform.in_container or bool(server.container) or bool(server.foreign_mnt_ns)
    return "container_config" if inside else "host"


def _refs(rows: list[ServerLimits], status: bool = False) -> tuple[str, ...]:
    refs = [file_ref(f"/proc/{r.server.pid}/limits") for r in rows]
    if status:
        refs += [file_ref(f"/proc/{r.server.pid}/status") for r in rows]
    return tuple(refs)


def _limit_fix(f: LimitsFacts, server: ServerProcess, what: str, systemd: str, docker: str, lxc: str) -> Fix:
    return Fix(
        kind="restart",
        where=_where(f, server),
        summary=f"Raise the {what} limit of the inference server and restart it",
        actions=(
            CommandAction(
                description=f"systemd unit: {systemd}; docker: {docker}; LXC (on the host): {lxc}; "
                "a shell launch: ulimit in the launching script (the hard limit bounds it)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify=f"grep '{what}' /proc/PID/limits of the restarted server",
        revert="restore the previous limit in the same place and restart",
        persist="the unit, container or launch config holds it",
    )


def _limits(check: Check, f: LimitsFacts, name: str) -> list[tuple[ServerLimits, Limit]] | Finding:
    """Each server's ``name`` limit, or the unknown finding of ``check`` when no server shows one."""
    if not f.servers:
        return check.unknown(f"no inference server process found ({f.searched})")
    if all(r.limits is None for r in f.servers):
        why = "; ".join(f"/proc/{r.server.pid}/limits: {r.error}" for r in f.servers[:4])
        return check.unknown(f"server limits not readable: {why}", evidence=_refs(list(f.servers)))
    pairs = [(r, r.limits[name]) for r in f.servers if r.limits is not None and name in r.limits]
    if not pairs:
        why = f"no '{name}' line in the servers' limits"
        return check.unknown(why, evidence=_refs(list(f.servers)))
    return pairs


NOFILE_CHECK = Check(
    "runtime.nofile",
    "Open-file limit of the server",
    reads="`/proc/PID/limits` (Max open files) of the servers, `/proc/sys/fs/file-nr`",
    problem="soft limit below 65536 (medium at 4096 or less), or the system's file handles nearly exhausted",
    fix="`LimitNOFILE=` / `--ulimit nofile` / `lxc.prlimit.nofile`",
    kinds=("restart",),
    premises=(premises.PLATFORM_FIX, premises.SERVERS),
    layer="workload",
)


def judge_nofile(f: LimitsFacts) -> Finding:
    pairs = _limits(NOFILE_CHECK, f, _NOFILE)
    if isinstance(pairs, Finding):
        return pairs
    rows = [r for r, _ in pairs]
    refs = _refs(rows) + ((file_ref(FILE_NR),) if f.file_nr else ())
    low = [(r, lim) for r, lim in pairs if lim.soft is not None and lim.soft < NOFILE_MIN]
    system = ""
    exhausted = f.file_nr is not None and f.file_nr[0] >= 0.9 * f.file_nr[1]
    if f.file_nr:
        system = f"; system file handles {f.file_nr[0]} of {f.file_nr[1]}"
    if not low and not exhausted:
        shown = sorted({str(lim) for _, lim in pairs})
        return NOFILE_CHECK.ok(
            f"{'; '.join(shown)} on {len(rows)} server processes{system}",
            expected=f"soft limit >= {NOFILE_MIN}",
            evidence=refs,
        )
    parts = [f"{r.server.label}: {lim}" for r, lim in low]
    if exhausted and f.file_nr:
        parts.append(f"system: {f.file_nr[0]} of {f.file_nr[1]} file handles allocated (fs.file-max)")
    softs = [lim.soft or 0 for _, lim in low]
    severity: Severity = "high" if exhausted else "medium" if softs and min(softs) <= NOFILE_LOW else "low"
    target = low[0][0].server if low else rows[0].server
    fix = _limit_fix(f, target, _NOFILE, "LimitNOFILE=1048576", "--ulimit nofile=1048576:1048576", "lxc.prlimit.nofile: 1048576")
    if exhausted:
        fix = fix.model_copy(
            update={"summary": fix.summary + "; raise fs.file-max and find the process leaking descriptors (ls /proc/*/fd)"}
        )
    return NOFILE_CHECK.problem_at(
        severity,
        "; ".join(parts),
        f"soft limit >= {NOFILE_MIN} open files",
        "Every client connection, ZMQ socket between the API server and its workers, shared-memory segment and "
        "loaded shard holds a file descriptor; with the common default of 1024 a server under a few hundred "
        "concurrent requests fails with 'Too many open files' (OSError 24) and drops requests. vLLM and SGLang "
        "try to raise their soft limit to the hard limit at start, so a low value seen on a running server means "
        "the hard limit stopped them (or another server is in use).",
        fix,
        subjects=tuple(r.server.label for r, _ in low) or ("fs.file-max",),
        evidence=refs,
    )


NPROC_CHECK = Check(
    "runtime.nproc",
    "Process/thread limit of the server's user",
    reads="`/proc/PID/limits` (Max processes), `/proc/PID/status` (Uid, Threads) of the servers",
    problem="a non-root server whose soft limit is below 4096 or under twice the threads its user runs",
    fix="`LimitNPROC=` / `--ulimit nproc` / `lxc.prlimit.nproc`",
    kinds=("restart",),
    premises=(premises.SERVERS,),
    layer="workload",
)


def _user_nproc_fix(host_uid: int) -> Fix:
    """A rootless container cannot raise a limit above its user's hard limit: the user's limit is raised on the host."""
    return Fix(
        kind="restart",
        where="container_host",
        summary=f"Raise the process limit of uid {host_uid} on the host, then recreate the rootless container",
        actions=(
            CommandAction(
                description=f"on the host: '<user> - nproc unlimited' for uid {host_uid} in /etc/security/limits.d/ (RHEL's "
                f"20-nproc.conf gives users 4096), or LimitNPROC=infinity in a drop-in for user@{host_uid}.service"
            ),
            CommandAction(
                description="log the user in again, recreate the container with --ulimit nproc=-1 and restart the server"
            ),
        ),
        risk="low",
        verify="grep 'Max processes' /proc/PID/limits of the restarted server",
        revert="remove the limits.d line or the drop-in",
        persist="the limits.d file or the user@.service drop-in",
    )


def _root_note(host_uid: int | None) -> str:
    """Whether the kernel exempts this root: only the host's root (and CAP_SYS_RESOURCE / CAP_SYS_ADMIN in the host's
    user namespace) is; a rootless container's root is an ordinary host user, counted with all its threads there."""
    if host_uid is None:
        return " (root: RLIMIT_NPROC is not enforced for it)"
    return (
        f" (root here is host uid {host_uid}: RLIMIT_NPROC is enforced and counts every thread of that user on the "
        "host, this container's included)"
    )


def judge_nproc(f: LimitsFacts) -> Finding:
    pairs = _limits(NPROC_CHECK, f, _NPROC)
    if isinstance(pairs, Finding):
        return pairs
    rows = [r for r, _ in pairs]
    refs = _refs(rows, status=True)
    threads: dict[int | None, int] = {}
    for r in rows:
        threads[r.uid] = threads.get(r.uid, 0) + (r.threads or 0)
    tight: list[tuple[ServerLimits, int, int]] = []
    mapped = f.root_host_uid
    for r, lim in pairs:
        soft = lim.soft
        if soft is None or (r.uid == 0 and mapped is None):
            continue
        used = threads.get(r.uid, 0)
        if soft < NPROC_MIN or used >= soft // 2:
            tight.append((r, soft, used))
    if not tight:
        root = _root_note(mapped) if any(r.uid == 0 for r in rows) else ""
        shown = sorted({Limit.word(lim.soft) for _, lim in pairs})
        total = sum(threads.values())
        return NPROC_CHECK.ok(
            f"soft {', '.join(shown)}; {total} threads in {len(rows)} server processes{root}",
            expected=f"soft limit >= {NPROC_MIN} and well above the threads in use",
            evidence=refs,
        )
    severity: Severity = "medium" if any(used >= 0.8 * soft for _, soft, used in tight) else "low"
    uid_text = {r.uid for r, _, _ in tight}
    fix = _limit_fix(f, tight[0][0].server, _NPROC, "LimitNPROC=infinity", "--ulimit nproc=-1", "lxc.prlimit.nproc: unlimited")
    if mapped is not None:
        fix = _user_nproc_fix(mapped)
    return NPROC_CHECK.problem_at(
        severity,
        "; ".join(
            f"{r.server.label}: {_NPROC} soft {soft}, {used} threads of uid {r.uid} in the servers" for r, soft, used in tight
        ),
        f"soft limit >= {NPROC_MIN} and at least twice the threads in use",
        "RLIMIT_NPROC counts every thread of the user, not processes: each tensor-parallel worker runs OpenMP, NCCL, "
        "tokenizer and CUDA threads, often over a hundred each. When the count reaches the limit, thread creation "
        "fails ('Resource temporarily unavailable', 'pthread_create failed') and workers die at start or under load. "
        f"Root is exempt; these processes run as uid {', '.join(str(u) for u in sorted(uid_text, key=str))}"
        + (_root_note(mapped) if mapped is not None else "")
        + ".",
        fix,
        subjects=tuple(r.server.label for r, _, _ in tight),
        evidence=refs,
    )
