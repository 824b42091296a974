"""runtime.env: debug and profiler variables left in the server's environment."""

from __future__ import annotations

from rigaudit.agents.check import Check
from rigaudit.agents.facts.processes import ServerProcess
from rigaudit.agents.investigators.runtime import premises
from rigaudit.agents.investigators.runtime.facts import RuntimeFacts, fix_where
from rigaudit.tools.hosts.probe import file_ref
from rigaudit.tools.schema.finding import CommandAction, Finding, Fix


def debug_variables(env: dict[str, str]) -> list[str]:
    """Variables that slow a server down or load a tool into it."""
    found = []
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() not in ("", "0"):
        found.append(f"CUDA_LAUNCH_BLOCKING={env['CUDA_LAUNCH_BLOCKING']}")
    for key in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        if env.get(key, "").strip():
            found.append(f"{key}={env[key]}")
    found += sorted(k for k in env if k.startswith(("NSYS_", "NV_COMPUTE_PROFILER", "NV_SANITIZER", "NCU_")))
    for key in ("CUDA_PROFILE", "COMPUTE_PROFILE", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        if env.get(key, "").strip() not in ("", "0"):
            found.append(f"{key}={env[key]}")
    preload = env.get("LD_PRELOAD", "")
    if any(tool in preload.lower() for tool in ("nsys", "nsight", "sanitizer", "injection", "ncu")):
        found.append(f"LD_PRELOAD={preload}")
    if not found:
        return []
    from rigaudit.tools.redact import redact_text  # imported when something is quoted: most checks quote nothing

    return [redact_text(item) for item in found]


DEBUG_ENV_CHECK = Check(
    "runtime.env",
    "Debug and profiler variables in the server's environment",
    reads="`/proc/PID/environ` of the servers",
    problem="`CUDA_LAUNCH_BLOCKING=1`, injection paths, profiler or sanitizer variables",
    fix="unset them",
    kinds=("restart",),
    premises=(premises.SERVERS,),
    layer="workload",
)


def judge_debug_env(f: RuntimeFacts) -> Finding:
    servers = f.scan.servers[:16]
    refs = tuple(file_ref(f"/proc/{s.pid}/environ") for s in servers)
    if not servers:
        return DEBUG_ENV_CHECK.unknown(f"no inference server process found ({f.scan.searched})")
    hits: list[tuple[ServerProcess, list[str]]] = []
    unreadable = []
    for server in servers:
        env, error = f.environs.get(server.pid, (None, "not read"))
        if env is None:
            unreadable.append(f"{server.label}: {error}")
        elif found := debug_variables(env):
            hits.append((server, found))
    if not hits:
        readable = len(servers) - len(unreadable)
        if not readable:
            return DEBUG_ENV_CHECK.unknown("server environments not readable: " + "; ".join(unreadable), evidence=refs)
        return DEBUG_ENV_CHECK.ok(
            f"no debug or profiler variable in {readable} server processes' environments",
            expected="no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
            evidence=refs,
        )
    variables = sorted({v.split("=")[0] for _, found in hits for v in found})
    fix = Fix(
        kind="restart",
        where=fix_where(f, hits[0][0]),
        summary="Unset " + ", ".join(variables) + " in the server's launch environment and restart it",
        actions=(
            CommandAction(
                description="remove them from the unit, container environment or launch script that starts "
                "the server (they are inherited by every worker)"
            ),
            CommandAction(description="restart the inference server"),
        ),
        risk="low",
        verify="after the restart, tr '\\0' '\\n' < /proc/PID/environ of the server shows none of them",
        revert="set them again and restart (only while debugging)",
        persist="the edited launch config persists",
    )
    return DEBUG_ENV_CHECK.problem_at(
        "medium",
        "; ".join(f"{s.label}: {', '.join(found)}" for s, found in hits),
        "no CUDA_LAUNCH_BLOCKING, injection or profiler variables",
        "CUDA_LAUNCH_BLOCKING=1 makes every kernel launch synchronous: CUDA graphs and launch overlap disappear and "
        "decode slows several-fold. Injection paths and NSYS/NCU variables load a profiler or sanitizer into every "
        "CUDA process; PYTORCH_NO_CUDA_MEMORY_CACHING turns off torch's allocator cache. All are debugging leftovers.",
        fix,
        subjects=tuple(s.label for s, _ in hits),
        evidence=refs,
    )
