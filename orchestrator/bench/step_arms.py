"""The pair of arm commands for a plan step of kind ``restart``, derived from this machine's server when it can be.

``bench ab --plan FILE --only STEP`` for such a step reads the server the step names (or the one server found),
works out the change from the server as it runs now (the debug variables of its environment, its open-file limit)
and where it is defined: a systemd unit (from ``/proc/PID/cgroup``, confirmed by ``systemctl show``) gives a
drop-in pair (:mod:`rigaudit.tools.bench.dropin`), a Docker container (``docker inspect``) a pair that restarts it
as found or runs a copy with the change (:mod:`rigaudit.tools.bench.docker_run`). The change comes from the server
itself, never from the plan file's text; a step whose problem is no longer there derives nothing. When nothing can
be derived the answer is one line that says why and asks for ``--arm base=... --arm fix=...``.
"""

from __future__ import annotations

import re

import anyio

from rigaudit.agents.facts.proc_info import parse_limits
from rigaudit.agents.facts.processes import ServerProcess, find_servers, parse_environ
from rigaudit.agents.investigators.runtime.debug_env import debug_variables
from rigaudit.tools.bench.docker_run import SUFFIX, container_arms
from rigaudit.tools.bench.dropin import RUN_UNITS, UNIT, UnitChange, dropin_path, unit_arms
from rigaudit.tools.bench.restart import ArmCommand
from rigaudit.tools.core.errors import UsageError
from rigaudit.tools.core.record import Record
from rigaudit.tools.files.bounded import JsonError, loads
from rigaudit.tools.hosts.base import Host
from rigaudit.tools.hosts.container_signs import cgroup_runtime
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.plan import PlanStep

NOFILE = 1048576
"""The open-file limit runtime.nofile's fix sets (its LimitNOFILE=)."""
NOFILE_MIN = 65536
NCCL_OFF = {"NCCL_P2P_DISABLE": ("1",), "NCCL_P2P_LEVEL": ("LOC", "0"), "NCCL_SHM_DISABLE": ("1",), "NCCL_IB_DISABLE": ("1",)}
_PID = re.compile(r"\bpid (\d+) \(")
"""A server as a step's subjects name it: ``pid 3120 (vllm)``, ``environment of pid 3120 (vllm)``."""


class ServerChange(Record):
    """What the fix arm changes in the server's definition: variables to remove, an open-file limit to set."""

    what: str
    unset: tuple[str, ...] = ()
    nofile: int | None = None


class DerivedArms(Record):
    """The two arms and what the person is told of them (where they come from, what they change)."""

    arms: tuple[ArmCommand, ArmCommand]
    about: tuple[str, ...]


class NotDerived(UsageError):
    """rigaudit cannot derive the two commands of a restart step; the message is one line that asks for them."""


def ask_line(step: PlanStep, why: str) -> str:
    return (
        f"{step.id} needs a server restart ({step.title}); rigaudit cannot derive its two commands: {why}. Measure it "
        "with arms that restart the server, --arm base='COMMAND that starts the server as it runs now' --arm "
        "fix='COMMAND that starts it with the change' (a systemd unit's restart, a docker run, "
        "benchmarks/restart_server.sh), without --plan/--only"
    )


def server_change(step: PlanStep, env: dict[str, str] | None, limits_text: str | None) -> ServerChange | str:
    """The change of ``step`` on a server of this environment and limits, or why there is none to derive."""
    if step.check == "runtime.env":
        if env is None:
            return "its environment cannot be read"
        names = tuple(dict.fromkeys(item.split("=", 1)[0] for item in debug_variables(env)))
        return ServerChange(f"unset {', '.join(names)}", unset=names) if names else "no debug variable is left in its environment"
    if step.check == "nccl.env":
        if env is None:
            return "its environment cannot be read"
        names = tuple(k for k, off in NCCL_OFF.items() if env.get(k, "").strip().upper() in off and k in step.title)
        return ServerChange(f"unset {', '.join(names)}", unset=names) if names else "the NCCL override is not in its environment"
    if step.check == "runtime.nofile":
        limit = parse_limits(limits_text).get("Max open files")
        if limit is None:
            return "its open-file limit cannot be read"
        if limit.soft is None or limit.soft >= NOFILE_MIN:
            return f"its open-file limit is {limit} already"
        return ServerChange(f"open-file limit {NOFILE} (now {limit})", nofile=NOFILE)
    return f"the change of {step.check} is not one it writes (it writes server environment and open-file limits)"


def _chosen(step: PlanStep, servers: tuple[ServerProcess, ...]) -> ServerProcess | str:
    named = {int(m.group(1)) for s in step.subjects if (m := _PID.search(s))}
    picked = [s for s in servers if s.pid in named] or list(servers)
    if not picked:
        return "no inference server process is running here"
    return picked[0]


def cgroup_unit(text: str | None) -> str | None:
    """The system service unit a ``/proc/PID/cgroup`` places the process in (``vllm.service``); None for none."""
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not (parts[0] == "0" or "name=systemd" in parts[1]):
            continue
        components = parts[2].split("/")
        if "user.slice" in components:
            return None
        return next((c for c in components if UNIT.match(c)), None)
    return None


class Where(Record):
    """Where the drop-in pair writes and what it runs (tests point them at a temporary folder and fakes)."""

    root: str = RUN_UNITS
    systemctl: str = "systemctl"
    proc: str = "/proc"


async def _unit_arms(
    probe: Probe, step: PlanStep, server: ServerProcess, unit: str, change: ServerChange, at: Where
) -> DerivedArms:
    shown = await probe.run(("systemctl", "show", "--property=Id,LoadState,FragmentPath", unit))
    props = dict(line.partition("=")[::2] for line in (shown.stdout or "").splitlines()) if shown.ok else {}
    if props and props.get("LoadState") != "loaded":
        raise NotDerived(ask_line(step, f"systemctl show says {unit} is {props.get('LoadState') or 'not loaded'}"))
    if props.get("FragmentPath", "").startswith("/run/systemd/transient/"):
        raise NotDerived(ask_line(step, f"{unit} is a transient unit (systemd-run): it does not outlive a stop"))
    path = dropin_path(unit, at.root)
    if await anyio.Path(path).exists():  # where the commands run: this machine
        raise NotDerived(ask_line(step, f"{path} is in place already (an earlier bench ab?): remove it and restart {unit}"))
    drop = UnitChange(unit, change.unset, change.nofile)
    base, fix = unit_arms(drop, root=at.root, systemctl=at.systemctl, proc=at.proc)
    confirmed = "confirmed by systemctl show" if props else "systemctl show did not answer"
    return DerivedArms(
        (base, fix),
        (
            f"{step.id}: {server.label} runs under the systemd unit {unit} (/proc/{server.pid}/cgroup, {confirmed})",
            f"fix: {change.what}, by the drop-in {path} ({'; '.join(drop.lines())}), then checked in the unit's main "
            "process; base: without it",
            f"the drop-in is in {RUN_UNITS}, which a reboot empties; nothing under /etc or /usr is changed",
        ),
    )


async def _container_arms(host: Host, step: PlanStep, server: ServerProcess, change: ServerChange) -> DerivedArms:
    engine = (server.container or "").split()
    cid = engine[1] if len(engine) == 2 and engine[0] == "docker" else None
    if cid is None:
        raise NotDerived(ask_line(step, f"{server.label} runs in a Docker container whose id the cgroup does not give"))
    result = await host.run(("docker", "inspect", cid), timeout_s=20.0)
    try:
        found = loads(result.stdout) if result.ok else None
    except JsonError:
        found = None
    info = found[0] if isinstance(found, list) and found and isinstance(found[0], dict) else None
    if info is None:
        said = (result.stderr.strip().splitlines() or [result.error or f"exit {result.exit_code}"])[-1][:160]
        raise NotDerived(ask_line(step, f"docker inspect {cid} did not describe the container ({said})"))
    arms = container_arms(info, unset=change.unset, nofile=change.nofile)
    if isinstance(arms, str):
        raise NotDerived(ask_line(step, arms))
    name = str(info.get("Name", "")).lstrip("/")
    image = info.get("Config", {}).get("Image") or info.get("Image")
    return DerivedArms(
        arms,
        (
            f"{step.id}: {server.label} runs in the Docker container {name} (image {image}; read with docker inspect {cid})",
            f"fix: {change.what}, in a copy of it named {name}{SUFFIX} (the container as found is stopped, never removed); "
            "base: the container as found, restarted",
        ),
    )


async def derive_arms(host: Host, step: PlanStep, *, at: Where | None = None) -> DerivedArms:
    """The base and fix arms of restart step ``step`` on ``host``'s server; :class:`NotDerived` (one line) when
    rigaudit cannot derive them. ``at``: where a drop-in pair writes and what it runs (this machine's by default)."""
    probe = Probe(host)
    scan = await find_servers(probe)
    server = _chosen(step, scan.servers)
    if isinstance(server, str):
        raise NotDerived(ask_line(step, f"{server} ({scan.searched})"))
    environ = await probe.read(f"/proc/{server.pid}/environ")
    change = server_change(step, parse_environ(environ.data), await probe.text(f"/proc/{server.pid}/limits"))
    if isinstance(change, str):
        raise NotDerived(ask_line(step, f"{server.label}: {change}"))
    cgroup = await probe.text(f"/proc/{server.pid}/cgroup")
    runtime = cgroup_runtime(cgroup)
    if runtime == "docker":
        return await _container_arms(host, step, server, change)
    if runtime is not None:
        raise NotDerived(ask_line(step, f"{server.label} runs in a {runtime} container"))
    unit = cgroup_unit(cgroup)
    if unit is None:
        path = (cgroup or "").strip().splitlines()[-1:] or ["not readable"]
        why = f"{server.label} runs under neither a systemd service nor a Docker container (cgroup {path[0]})"
        raise NotDerived(ask_line(step, why))
    return await _unit_arms(probe, step, server, unit, change, at or Where())
