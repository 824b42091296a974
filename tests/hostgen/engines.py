"""Serving the archetypes do not run: vLLM's Ray workers on a worker node of a multi-node deployment, NVIDIA NIM for
LLMs containers beside a vLLM container, and an in-house engine no marker names, as their processes look under /proc.

Ray actors carry their title as their command line (Ray's setproctitle: ``ray::RayWorkerWrapper.execute_method``);
they are children of the node's ``raylet``, itself a child of ``ray start --address=HEAD:6379 --block`` (here run by a
unit). NIM's engine is ``python3 -m nim_llm_sdk.entrypoints.openai.api_server`` from the image's venv, as NIM's
start_server.sh starts it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tests.hostgen.archetypes import vllm
from tests.hostgen.procs import Proc, write_proc
from tests.hostgen.spec import Fault, HostSpec, ProcessSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

RAY_WORKER = "ray::RayWorkerWrapper.execute_method"
RAY_START, RAYLET = 2900, 2950
RAY_CGROUP = "0::/system.slice/ray-worker.service\n"
NIM_PYTHON = "/opt/nim/llm/.venv/bin/python3"
NIM_ENGINE = (NIM_PYTHON, "-m", "nim_llm_sdk.entrypoints.openai.api_server")
IN_HOUSE = ("/srv/infer/.venv/bin/python3", "-m", "acme_infer.main", "--model", "/models/acme-13b", "--port", "9000")
"""An engine no server marker names (an in-house one): a process in a container that holds most of a GPU."""


def _variant(spec: HostSpec, suffix: str, summary: str, **changes: object) -> HostSpec:
    return replace(spec, name=f"{spec.name}+{suffix}", summary=f"{spec.summary}; FAULT: {summary}", **changes)  # type: ignore[arg-type]


def ray_worker_node(
    spec: HostSpec,
    *,
    head: str = "10.40.0.11",
    node: str = "10.40.0.12",
    env: dict[str, str] | None = None,
    actor: str = RAY_WORKER,
) -> HostSpec:
    """A worker node of multi-node vLLM on Ray: one vLLM Ray worker actor per GPU under this node's raylet, whose GCS
    is on the head node ``head``; no process here carries a vLLM word. ``env``: variables in the workers'
    environment (a runtime_env, or the unit's); ``actor``: another actor's title (a Ray job that is no vLLM)."""
    extra = tuple((env or {}).items())
    workers = tuple(
        ProcessSpec((actor,), env=(("HOME", "/root"), *extra), gpus=(g,), gpu_memory_mib=71000, threads=120)
        for g in range(spec.gpus.count)
    )

    def apply(built: Built) -> None:
        ray = "/usr/local/lib/python3.10/dist-packages/ray"
        start = ("/usr/bin/python3", "/usr/local/bin/ray", "start", f"--address={head}:6379", "--block")
        built.procs[RAY_START] = Proc(RAY_START, start, comm="ray", cgroup=RAY_CGROUP)
        raylet = (f"{ray}/core/src/ray/raylet/raylet", f"--node_ip_address={node}", f"--gcs-address={head}:6379")
        built.procs[RAYLET] = Proc(RAYLET, raylet, comm="raylet", ppid=RAY_START, cgroup=RAY_CGROUP)
        for pid, proc in list(built.procs.items()):
            if proc.argv[:1] == (actor,):
                built.procs[pid] = replace(proc, ppid=RAYLET, comm=actor[:15], cgroup=RAY_CGROUP)
            if pid in (RAY_START, RAYLET) or proc.argv[:1] == (actor,):
                write_proc(built.tree, built.procs[pid])  # faults run after the processes were written

    fault = Fault("ray-worker-node", "vLLM's Ray workers under raylet hold the GPUs", apply)
    said = f" with {', '.join(f'{k}={v}' for k, v in extra)} in the workers' environment" if extra else ""
    return _variant(
        spec,
        "ray-worker" + ("-env" if extra else "") + ("" if actor == RAY_WORKER else "-other-actor"),
        f"a worker node of a Ray cluster (head {head}): {actor} actors on its {spec.gpus.count} GPUs{said}",
        processes=workers,
        faults=(*spec.faults, fault),
    )


def beside_vllm(spec: HostSpec, engine: tuple[str, ...] = NIM_ENGINE, gpus: tuple[int, ...] = (4, 5)) -> HostSpec:
    """A Docker host whose vLLM container serves at TP 4 on GPUs 0-3 and, on each of ``gpus``, a container whose
    ``engine`` (NVIDIA NIM for LLMs by default) holds most of the GPU at TP 1."""
    python = engine[0] if engine[0].endswith("python3") else "/usr/bin/python3"
    others = tuple(
        ProcessSpec(
            engine,
            env=(("HOME", "/opt/nim"), ("NIM_SERVER_PORT", str(8000 + g))) if engine == NIM_ENGINE else (("HOME", "/srv"),),
            gpus=(g,),
            gpu_memory_mib=72000,
            in_container=True,
            python=python,
        )
        for g in gpus
    )
    server = replace(vllm("/models/Llama-3.1-70B-Instruct", (0, 1, 2, 3), mib=70000), in_container=True)
    what = "NVIDIA NIM for LLMs" if engine == NIM_ENGINE else f"an engine no marker names ({engine[2]})"
    suffix = "nim" if engine == NIM_ENGINE else "in-house-engine"
    return _variant(
        spec,
        suffix,
        f"vLLM TP 4 on GPUs 0-3 and {what} containers on GPUs {', '.join(map(str, gpus))}",
        processes=(server, *others),
    )
