"""cuda.foreign_processes and cuda.mps: who else computes on the serving GPUs, and whether an MPS daemon sits between."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.deliberate import MPS_SHARING
from rigaudit.agents.facts.gpus import GpuInventory
from rigaudit.agents.facts.mps import MPS_CLIENTS_FN, MpsState, collect_mps, idle_shares, log_ref
from rigaudit.agents.facts.numbers import count
from rigaudit.agents.facts.nvml_reads import labels, nvml_unusable
from rigaudit.agents.facts.platform import Platform
from rigaudit.agents.facts.platform import fix_where as layer_where
from rigaudit.agents.facts.proc_info import status_ppid, status_uid
from rigaudit.agents.facts.processes import GpuProcess, ServerScan, parse_environ
from rigaudit.agents.facts.time_slicing import PLUGIN_COMM, TimeSlicing, read_time_slicing
from rigaudit.agents.investigators.cuda import premises
from rigaudit.agents.investigators.cuda.leftover import LEFTOVER_WHY, left_over
from rigaudit.tools.core.record import Record, field
from rigaudit.tools.hosts.probe import Probe, dir_ref, file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix, Severity

MPS_PIPE = "/tmp/nvidia-mps"
MPS_COMMS = ("nvidia-cuda-mps", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server")
PLUGIN_MPS_ROOT = "/mps/"
"""Where the NVIDIA device plugin's MPS control daemon puts each resource's pipe directory in a pod
(``/mps/nvidia.com/gpu/pipe``)."""
MPS_LIMITS = ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")
_SCAN_LIMIT = 4096


class ProcessFacts(Record):
    inventory: GpuInventory
    platform: Platform
    scan: ServerScan
    uids: dict[int, int | None]
    """pid -> real uid, for every NVML GPU process and every server."""
    pids: tuple[int, ...] | None
    """Every PID under /proc (None: /proc not listable; empty: the process list is not recorded)."""
    mps_pids: tuple[int, ...]
    mps_pipe: tuple[str, ...] | None
    """Entries of /tmp/nvidia-mps, or None when it does not exist."""
    server_env: dict[int, dict[str, str]]
    mps: MpsState = MpsState((), (), None)
    time_slicing: TimeSlicing = TimeSlicing(None, "not read")
    pipes: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    """The servers' CUDA_MPS_PIPE_DIRECTORY folders other than the default, and their entries (None: absent)."""
    ppids: dict[int, int | None] = field(default_factory=dict)
    """pid -> parent pid (``/proc/PID/status`` PPid), for every NVML GPU process and every server."""


async def collect_processes(probe: Probe, inventory: GpuInventory, platform: Platform, scan: ServerScan) -> ProcessFacts:
    pids_of_interest = sorted({p.pid for p in scan.gpu_processes} | {s.pid for s in scan.servers})
    status = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/status") for p in pids_of_interest])
    listing = await probe.list_dir("/proc")
    pids = (
        None
        if listing.entries is None
        else tuple(sorted(c for n in listing.entries if (c := count(n)) is not None)[:_SCAN_LIMIT])
    )
    comms = await probe.gather(*[lambda p=p: probe.text(f"/proc/{p}/comm") for p in pids or ()])
    mps = tuple(p for p, c in zip(pids or (), comms, strict=True) if c and c.strip().startswith(MPS_COMMS[0]))
    pipe = await probe.list_dir(MPS_PIPE)
    environs = await probe.gather(*[lambda s=s: probe.read(f"/proc/{s.pid}/environ") for s in scan.servers[:16]])
    server_env = {s.pid: env for s, r in zip(scan.servers[:16], environs, strict=True) if (env := parse_environ(r.data))}
    mps_state = await collect_mps(probe, inventory, mps)
    plugin = tuple(p for p, c in zip(pids or (), comms, strict=True) if c and c.strip() == PLUGIN_COMM)
    named = sorted({d for env in server_env.values() if (d := env.get("CUDA_MPS_PIPE_DIRECTORY", MPS_PIPE)) != MPS_PIPE})[:4]
    listed = await probe.gather(*[lambda d=d: probe.list_dir(d) for d in named])
    sliced = await read_time_slicing(probe, plugin, platform.in_container)
    return ProcessFacts(
        inventory,
        platform,
        scan,
        {p: status_uid(t) for p, t in zip(pids_of_interest, status, strict=True)},
        pids,
        mps,
        pipe.entries,
        server_env,
        mps_state,
        sliced,
        {d: r.entries for d, r in zip(named, listed, strict=True)},
        {p: status_ppid(t) for p, t in zip(pids_of_interest, status, strict=True)},
    )


def _cmd(p: GpuProcess) -> str:
    from rigaudit.tools.redact import redact_text  # imported when a process is quoted, not at every start

    return redact_text(" ".join(p.argv))[:60] if p.argv else "command unknown"


FOREIGN_PROCESSES_CHECK = Check(
    "cuda.foreign_processes",
    "Other users' processes on the serving GPUs",
    reads="NVML compute processes per GPU, `/proc/PID/status` Uid of each and of the server",
    problem="a process of another user than the server's on a GPU the server uses (high when it is another server; "
    "the node's where it is left over from a job: on a host, parent pid 1, no service unit)",
    fix="stop them; reserve the GPUs (scheduler, device permissions)",
    kinds=("restart",),
    premises=(premises.SERVERS, premises.NVML),
    layer="workload",
)


def _server_owner(f: ProcessFacts, servers: list[GpuProcess]) -> int | None:
    """The user whose server processes hold the most GPU memory (``None``: that user is not readable)."""
    memory: dict[int | None, int] = {}
    for p in servers:
        memory[f.uids.get(p.pid)] = memory.get(f.uids.get(p.pid), 0) + (p.used_bytes or 0)
    return max(memory, key=lambda u: memory[u])


def _foreign_problem(f: ProcessFacts, foreign: list[GpuProcess], owner: int, refs: tuple[str, ...]) -> Finding:
    pids = sorted({p.pid for p in foreign})
    severity: Severity = "high" if any(p.server for p in foreign) else "medium"
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "workload"),
        summary="Keep other users off the serving GPUs: stop their processes and reserve the GPUs",
        actions=(
            *(CommandAction(description=f"ask the owner, then stop pid {pid}", argv=("kill", str(pid))) for pid in pids),
            CommandAction(
                description="reserve the GPUs: a scheduler (Slurm gres, Kubernetes device plugin), device permissions "
                "(/dev/nvidiaN group), or CUDA_VISIBLE_DEVICES conventions for the other users"
            ),
        ),
        risk="medium",
        verify="nvidia-smi --query-compute-apps=pid,used_memory --format=csv lists only the server's processes",
        revert="none",
        persist="the GPU reservation (scheduler or device permissions)",
    )
    left = [p for p in foreign if left_over(p, f.ppids.get(p.pid), f.platform)]
    finding = FOREIGN_PROCESSES_CHECK.problem_at(
        severity,
        "; ".join(f"pid {p.pid} (uid {f.uids.get(p.pid)}, {_cmd(p)}) on GPU{p.gpu_index}" for p in foreign)
        + f"; the server runs as uid {owner}"
        + (f"; {len(left)} {LEFTOVER_WHY}" if left else ""),
        "only the server's user on its GPUs",
        "Processes of other users time-slice the GPU with the server (CUDA contexts of different processes do not run "
        "concurrently without MPS) and take memory the server sized its KV cache for: latency jumps whenever they "
        "compute, and the server can fail with out-of-memory when they grow. Another user's inference server on the "
        "same GPUs halves both."
        if severity == "medium"
        else "Another user's inference server shares these GPUs: both time-slice the SMs and split the memory, so "
        "each runs at a fraction of its throughput with unpredictable latency.",
        fix,
        subjects=labels(f.inventory, sorted({p.gpu_index for p in foreign})),
        evidence=refs,
    )
    node = bool(left)
    return finding.model_copy(update={"layer": "node" if node else "workload"})


def judge_foreign_processes(f: ProcessFacts) -> Finding:
    if why := nvml_unusable(f.inventory):
        return FOREIGN_PROCESSES_CHECK.unknown(why)
    indices = f.inventory.nvml_indices
    refs = tuple(f"nvml:nvmlDeviceGetComputeRunningProcesses({i})" for i in indices)
    if not f.scan.nvml_listed:
        return FOREIGN_PROCESSES_CHECK.unknown("nvmlDeviceGetComputeRunningProcesses gave no answer", evidence=refs)
    procs = f.scan.gpu_processes
    if not procs:
        return FOREIGN_PROCESSES_CHECK.ok(
            f"no compute process on {len(indices)} GPUs", expected="only the server's user", evidence=refs
        )
    refs += tuple(file_ref(f"/proc/{p}/status") for p in sorted({p.pid for p in procs}))
    servers = [p for p in procs if p.server]
    if not servers:
        uids = sorted({str(f.uids.get(p.pid)) for p in procs})
        why = f"{len(procs)} compute processes (uids {', '.join(uids)}) but none of them is a recognized inference server"
        return FOREIGN_PROCESSES_CHECK.unknown(why, evidence=refs)
    owner = _server_owner(f, servers)
    if owner is None:
        return FOREIGN_PROCESSES_CHECK.unknown("the server's user id is not readable (/proc/PID/status)", evidence=refs)
    serving = {p.gpu_index for p in servers if f.uids.get(p.pid) == owner}
    foreign = [p for p in procs if p.gpu_index in serving and f.uids.get(p.pid) not in (owner, None)]
    unreadable = [p for p in procs if p.gpu_index in serving and f.uids.get(p.pid) is None]
    if not foreign:
        if unreadable:
            shown = ", ".join(str(p.pid) for p in unreadable[:8])
            return FOREIGN_PROCESSES_CHECK.unknown(f"user of pids {shown} on the serving GPUs not readable", evidence=refs)
        return FOREIGN_PROCESSES_CHECK.ok(
            f"every compute process on the {len(serving)} serving GPUs runs as uid {owner} (the server's)",
            expected="only the server's user on its GPUs",
            evidence=refs,
        )
    return _foreign_problem(f, foreign, owner, refs)


MPS_DAEMON_CHECK = Check(
    "cuda.mps",
    "CUDA MPS daemon",
    reads="`/proc/*/comm` (nvidia-cuda-mps-*), `/tmp/nvidia-mps` and the servers' own CUDA_MPS_PIPE_DIRECTORY, the "
    "server's CUDA_MPS_* environment, NVML's MPS clients, the MPS servers' users and the control daemon's "
    "`control.log` (its pending list)",
    problem="an MPS daemon the server is not configured for (low), or MPS thread/memory limits on a server that is no "
    "MPS client (medium); limits on MPS clients are provisioning (low), medium where a GPU's clients together may not "
    "use all of its SMs; a client of another user waiting behind the running MPS server (medium); a server's "
    "CUDA_MPS_PIPE_DIRECTORY that no daemon serves (high; the node's where the pipe is the device plugin's or its "
    "folder is there without a control socket)",
    fix="stop the MPS control daemon; unset CUDA_MPS_* limits; run a waiting client as the MPS server's user; start the "
    "daemon that serves the server's pipe (on a node, the device plugin's)",
    kinds=("restart",),
    premises=(premises.PLATFORM_FIX, premises.SERVERS),
    layer="workload",
)


def _mps_limits(f: ProcessFacts) -> dict[int, list[str]]:
    """Per server pid, its CUDA_MPS_* limits other than none (empty or 100 %)."""
    limits = {
        pid: [f"{k}={env[k]}" for k in MPS_LIMITS if k in env and env[k].strip() not in ("", "100")]
        for pid, env in f.server_env.items()
    }
    return {pid: v for pid, v in limits.items() if v}


def _mps_problem(f: ProcessFacts, limits: dict[int, list[str]], refs: tuple[str, ...]) -> Finding:
    parts = []
    if f.mps_pids:
        parts.append(f"nvidia-cuda-mps processes: pids {', '.join(map(str, f.mps_pids[:8]))}")
    if f.mps_pipe is not None and "control" in f.mps_pipe:
        parts.append(f"{MPS_PIPE}/control present")
    parts += [f"pid {pid}: {', '.join(v)}" for pid, v in limits.items()]
    severity: Severity = "medium" if limits else "low"
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "workload"),
        summary="Stop the MPS control daemon (and unset MPS limits) unless the deployment relies on MPS, then restart the server",
        actions=(
            CommandAction(description="stop MPS: echo quit | nvidia-cuda-mps-control (as the user that started it)"),
            CommandAction(description="remove CUDA_MPS_* variables from the server's environment and restart it"),
        ),
        risk="medium",
        verify=f"no nvidia-cuda-mps process (ps -e); {MPS_PIPE} gone; nvidia-smi shows the server's own processes",
        revert="nvidia-cuda-mps-control -d (and set the variables again)",
        persist="disable the unit or script that starts nvidia-cuda-mps-control at boot",
    )
    return MPS_DAEMON_CHECK.problem_at(
        severity,
        "; ".join(parts),
        "no MPS daemon unless the server is set up for it",
        "With an MPS control daemon running, every CUDA process on those GPUs becomes a client of one MPS server: "
        "clients of another user cannot start, one client's fatal fault tears down all of them, and "
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / CUDA_MPS_PINNED_DEVICE_MEM_LIMIT cap the SMs and memory the server may "
        "use. Inference servers that own whole GPUs gain nothing from it.",
        fix,
        subjects=tuple(f"pid {pid}" for pid in (*f.mps_pids, *limits)) or (MPS_PIPE,),
        evidence=refs,
    )


def _sharing_ok(f: ProcessFacts, clients: list[int], refs: tuple[str, ...]) -> Finding:
    """The servers are MPS clients (NVML's MPS process list): the daemon is theirs (the default pipe needs no
    CUDA_MPS_PIPE_DIRECTORY)."""
    pipes = sorted({env["CUDA_MPS_PIPE_DIRECTORY"] for env in f.server_env.values() if "CUDA_MPS_PIPE_DIRECTORY" in env})
    of = (
        f"nvidia-cuda-mps-server pid {', '.join(map(str, f.mps.servers))}"
        if f.mps.servers
        else "an MPS server outside this container's PID namespace"
        + (f" (CUDA_MPS_PIPE_DIRECTORY={', '.join(pipes)})" if pipes else " (the default pipe)")
    )
    return MPS_DAEMON_CHECK.ok(
        f"MPS in use: NVML lists the servers as MPS clients (pids {', '.join(map(str, clients[:8]))}) of {of}",
        expected="no MPS daemon unless the server is set up for it",
        explanation=f"Deliberate ({MPS_SHARING.key}): {MPS_SHARING.what}; {MPS_SHARING.conditions[0]} ({MPS_SHARING.source}).",
        evidence=refs + tuple(f"nvml:{MPS_CLIENTS_FN}({i})" for i in f.inventory.nvml_indices),
    )


def _sharing_limits(f: ProcessFacts, limits: dict[int, list[str]], clients: list[int], refs: tuple[str, ...]) -> Finding:
    """MPS limits on servers that share GPUs through MPS on purpose: the guide's way to provision each client's share,
    at the cost of capping a client while the others idle. Medium where a GPU's clients together may not use all of
    its SMs (one replica at 50 %): the rest of that GPU computes for no one."""
    by_gpu: dict[int, list[int]] = {}
    for p in f.scan.gpu_processes:
        if p.server and p.pid in clients:
            by_gpu.setdefault(p.gpu_index, []).append(p.pid)
    idle = idle_shares(by_gpu, f.server_env)
    unused = "; ".join(f"GPU{g}: its {len(by_gpu[g])} MPS client(s) may use {share:g} % of its SMs" for g, share in idle.items())
    action = (
        "raise CUDA_MPS_ACTIVE_THREAD_PERCENTAGE so that each GPU's clients together reach 100 % (the MPS guide: "
        "100/n % for n clients, or up to 200/n % to let them overlap), or drop it where one server has the GPU, "
        "and restart the servers"
        if idle
        else "for a server that should burst: raise CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in its environment "
        "(or set it per client through nvidia-cuda-mps-control's set_active_thread_percentage) and restart it"
    )
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "workload"),
        summary="Keep MPS; give each GPU's clients all of its SMs between them"
        if idle
        else "Keep MPS; raise or drop the per-client limits only if a replica should use the whole GPU while the others idle",
        actions=(CommandAction(description=action),),
        risk="low",
        verify="the servers' throughput under load with the new share (rigaudit bench inference)",
        revert="restore the previous CUDA_MPS_* values and restart the server",
        persist="the server's unit or launch environment",
    )
    cost = (
        f"The limits leave SMs that no client may use: {unused}."
        if idle
        else "The cost: a client never uses more than its share, even while the others on its GPU idle."
    )
    return MPS_DAEMON_CHECK.problem_at(
        "medium" if idle else "low",
        "; ".join(f"pid {pid}: {', '.join(v)}" for pid, v in limits.items())
        + f"; the servers are MPS clients (pids {', '.join(map(str, clients[:8]))})"
        + (f"; {unused}" if idle else ""),
        "MPS limits that match how the GPUs are shared",
        f"Deliberate ({MPS_SHARING.key}): the servers share GPUs through MPS, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / "
        f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT are the MPS guide's way to provision each client's share. {cost} "
        f"({MPS_SHARING.source})",
        fix,
        subjects=tuple(f"pid {pid}" for pid in limits),
        evidence=refs,
    )


def _no_daemon(f: ProcessFacts, clients: list[int], refs: tuple[str, ...]) -> Finding:
    """No MPS daemon seen here. In a container a host's daemon never shows in /proc: NVML's MPS client list tells."""
    if f.pids is None or not f.pids:
        return MPS_DAEMON_CHECK.unknown(
            f"{MPS_PIPE} absent, but the process list is not recorded here (no PID under /proc), so a daemon using "
            "another pipe directory, or one inside a container, cannot be ruled out",
            evidence=refs,
        )
    seen = f"no nvidia-cuda-mps process among {len(f.pids)} /proc entries; no {MPS_PIPE}/control"
    expected = "no MPS daemon unless the server is set up for it"
    if not f.platform.in_container:
        return MPS_DAEMON_CHECK.ok(seen, expected=expected, evidence=refs)
    nvml = tuple(f"nvml:{MPS_CLIENTS_FN}({i})" for i in f.inventory.nvml_indices)
    if f.mps.clients is None:
        return MPS_DAEMON_CHECK.unknown(
            f"{seen} in this container, where a host's MPS daemon does not show; NVML's MPS client list was not "
            f"answered ({MPS_CLIENTS_FN} would tell whether the servers compute through MPS)",
            evidence=refs,
        )
    if clients:
        return _sharing_ok(f, clients, refs)
    return MPS_DAEMON_CHECK.ok(
        f"{seen}; NVML lists no MPS client on {len(f.inventory.nvml_indices)} GPUs (a host's daemon, not visible from "
        "this container, would show its clients there)",
        expected=expected,
        evidence=refs + nvml,
    )


MPS_MAN = "nvidia-cuda-mps-control(1); NVIDIA MPS guide, docs.nvidia.com/deploy/mps"


def _queued(f: ProcessFacts, refs: tuple[str, ...]) -> Finding:
    """A client of another user waits on the control daemon's pending list: one MPS server per user, and a client of
    another user is served only once every client of the running server has exited (inference servers never do)."""
    users = ", ".join(f"uid {u}" for u in f.mps.server_uids)
    waiting = "; ".join(
        f"{'pid ' + str(q.pid) if q.pid else 'a client in another PID namespace'} of uid {q.uid}" for q in f.mps.queued
    )
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "workload"),
        summary=f"Run the waiting client as the MPS server's user ({users}); the daemon's multi-user mode only where "
        "isolation between users may be given up",
        actions=(
            CommandAction(
                description=f"stop the waiting client ({waiting}) and start it again as {users}, the user of the MPS "
                "server that holds the GPUs (outside MPS it cannot open them: the MPS server holds them)"
            ),
            CommandAction(
                description="only if every user's clients may share one server (no isolation between them): restart "
                "the control daemon in multi-user mode (nvidia-cuda-mps-control -d -M, Volta and later), then the servers"
            ),
        ),
        risk="medium",
        verify="the control log shows no client left on the pending list; the waiting client's work starts",
        revert="stop the client again",
        persist="the waiting job's launch user (or the MPS unit's ExecStart)",
    )
    return MPS_DAEMON_CHECK.problem_at(
        "medium",
        f"MPS server(s) of {users} hold the GPUs; {waiting} waits on the control daemon's pending list: "
        + "; ".join(q.line for q in f.mps.queued[:2]),
        "every MPS client of the running server's user",
        "MPS runs one server per user: a client of another user is queued until every client of the running server "
        "has exited, then the daemon starts a server for the new user. Inference servers never exit, so the waiting "
        f"client hangs at CUDA initialization for as long as they run ({MPS_MAN}).",
        fix,
        subjects=tuple(f"pid {q.pid}" if q.pid else f"uid {q.uid}" for q in f.mps.queued),
        evidence=refs + log_ref(f.mps),
    )


def _pipe_not_served(f: ProcessFacts, refs: tuple[str, ...]) -> Finding | None:
    """A server names an MPS pipe directory with no control socket in it: no daemon serves it, so its CUDA cannot
    reach MPS, and on GPUs in Exclusive_Process (MPS's mode) it cannot open them either."""
    here = bool(f.mps.controls)  # a daemon here: an unlisted folder is unread, not absent
    dead = {d: e for d, e in f.pipes.items() if (e is None and not here) or (e is not None and "control" not in e)}
    if not dead:
        return None
    users = [pid for pid, env in f.server_env.items() if env.get("CUDA_MPS_PIPE_DIRECTORY") in dead]
    node = f.platform.in_container
    fix = Fix(
        kind="restart",
        where=layer_where(f.platform, "gpu_driver"),
        summary="Start the MPS control daemon that serves "
        + ", ".join(dead)
        + (" on the node (with the NVIDIA device plugin's MPS, its mps-control-daemon pod)" if node else "")
        + ", then restart the server",
        actions=(
            CommandAction(
                description="read why the daemon is not running: "
                + (
                    "kubectl -n <plugin namespace> logs of the device plugin's mps-control-daemon pod on this node"
                    if node
                    else "its unit's journal (journalctl -u <the MPS unit>) or the control.log of its CUDA_MPS_LOG_DIRECTORY"
                )
            ),
            CommandAction(description="once it serves the pipe (its control socket is there), restart the server"),
        ),
        risk="low",
        verify=f"ls {next(iter(dead))} shows control; NVML lists the server as an MPS client",
        revert="none needed",
        persist="the daemon's unit or DaemonSet",
    )
    finding = MPS_DAEMON_CHECK.problem_at(
        "high",
        "; ".join(f"{d}: {'absent' if e is None else 'no control socket'}" for d, e in dead.items())
        + f" (CUDA_MPS_PIPE_DIRECTORY of pids {', '.join(map(str, users))})",
        "the server's MPS pipe directory served by a control daemon",
        "A CUDA client that names an MPS pipe directory connects to the control daemon there; with none, it runs without "
        "MPS, and on GPUs in Exclusive_Process (the mode MPS sets) the MPS server, or the first process, holds each GPU: "
        f"its CUDA initialization fails ({MPS_MAN}).",
        fix,
        subjects=tuple(f"pid {pid}" for pid in users),
        evidence=refs + tuple(dir_ref(d) for d in dead),
    )
    return finding.model_copy(update={"layer": "node" if any(map(_node_daemons, dead.items())) else "workload"})


def _node_daemons(pipe: tuple[str, tuple[str, ...] | None]) -> bool:
    """The pipe is a node daemon's: the device plugin's (``/mps/...``, every MPS-shared pod on the node fails), or a
    folder that is there without its control socket (a daemon made it and no longer serves it); an absent folder
    that only the server's environment names may be the server's own mistake."""
    folder, entries = pipe
    return folder.startswith(PLUGIN_MPS_ROOT) or entries is not None


def judge_mps_daemon(f: ProcessFacts) -> Finding:
    refs = (dir_ref(MPS_PIPE), dir_ref("/proc"))
    env_refs = tuple(file_ref(f"/proc/{pid}/environ") for pid in f.server_env)
    configured = [pid for pid, env in f.server_env.items() if "CUDA_MPS_PIPE_DIRECTORY" in env]
    clients = sorted({p.pid for p in f.scan.gpu_processes if p.server and f.mps.client(p.pid)})
    limits = _mps_limits(f)
    daemon = bool(f.mps_pids) or (f.mps_pipe is not None and "control" in f.mps_pipe)
    if (unserved := _pipe_not_served(f, refs + env_refs)) is not None:
        return unserved
    if not daemon and not limits:
        return _no_daemon(f, clients, refs)
    if daemon and f.mps.queued:
        return _queued(f, refs + env_refs)
    if daemon and clients and not limits:
        return _sharing_ok(f, clients, refs + env_refs)
    if daemon and configured and not limits:
        return MPS_DAEMON_CHECK.ok(
            f"MPS daemon running and the server is configured for it (CUDA_MPS_PIPE_DIRECTORY in pids "
            f"{', '.join(map(str, configured))})",
            expected="no MPS daemon unless the server is set up for it",
            evidence=refs + env_refs,
        )
    if daemon and clients:
        return _sharing_limits(f, limits, clients, refs + env_refs)
    return _mps_problem(f, limits, refs + env_refs)
