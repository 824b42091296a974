"""Run the collection on Slurm nodes: one ``srun --ntasks-per-node=1`` step, one task per node.

The step asks for no GPU unless :attr:`SlurmJob.gres` says so: it then runs beside the nodes' jobs at once, but
under cgroup.conf's ``ConstrainDevices=yes`` it can open none of their GPUs (the audit says so per node and the
fleet warns); ``gres`` (``--slurm-gres gpu:8``) makes each node's step hold its GPUs, waiting until they are free.

Each task runs ``rigaudit snapshot --stdout`` (the node's own rigaudit: a shared install or venv)
under :data:`~tools.remote.framing.FRAMER`, so every node's snapshot comes back over srun's one
stdout, tagged with the node's name; no shared folder is needed. As each node's stream completes,
``on_node`` is called (the caller audits it while the other nodes are still collecting).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.local import CappedOutput
from rigaudit.tools.remote.framing import FRAMER, FrameReader, NodeStream
from rigaudit.tools.remote.transport import check_words

_MAX_LINE = 1024 * 1024


class SlurmJob(Record):
    """Where the step runs. Without ``nodes`` or ``nodelist`` Slurm picks one node."""

    partition: str | None = None
    nodes: int | None = None
    nodelist: str | None = None
    srun: Sequence[str] = ("srun",)
    job_name: str = "rigaudit-fleet"
    time_limit_min: int | None = None
    gres: str | None = None
    """``--gres`` for each node (``gpu:8``): under ``ConstrainDevices=yes`` a step opens only the GPUs it was given,
    so without it NVML in the step lists none; with it the job waits until that many GPUs are free on each node."""

    def argv(self, task: Sequence[str]) -> list[str]:
        argv = [*self.srun, "--ntasks-per-node=1", f"--job-name={self.job_name}", "--input=none", "--kill-on-bad-exit=0"]
        if self.partition:
            argv.append(f"--partition={self.partition}")
        if self.nodes is not None:
            argv.append(f"--nodes={self.nodes}")
        if self.nodelist:
            argv.append(f"--nodelist={self.nodelist}")
        if self.time_limit_min is not None:
            argv.append(f"--time={max(1, self.time_limit_min)}")
        if self.gres:
            argv.append(f"--gres={self.gres}")
        return [*argv, *task]


def task_argv(rigaudit: str = "rigaudit", python: str = "python3") -> list[str]:
    """What each task runs: the framer around ``rigaudit snapshot --stdout``."""
    return [
        *check_words(python, "node python command"),
        "-I",
        "-S",
        "-c",
        FRAMER,
        *check_words(rigaudit, "node rigaudit command"),
        "snapshot",
        "--stdout",
    ]


class SrunOutcome(Record):
    exit_code: int | None
    stderr: str
    timed_out: bool
    unfinished: tuple[str, ...]
    """Nodes whose stream started but never ended."""
    finished: tuple[str, ...]


async def expand_nodelist(nodelist: str, *, scontrol: str = "scontrol") -> list[str]:
    """``gpu[01-03]`` -> ``gpu01 gpu02 gpu03`` through ``scontrol show hostnames``; the plain list when that fails."""
    with contextlib.suppress(OSError):
        result = await anyio.run_process([scontrol, "show", "hostnames", nodelist], check=False)
        names = result.stdout.decode("utf-8", errors="replace").split()
        if result.returncode == 0 and names:
            return names
    return [n for n in nodelist.split(",") if n]


def _kill_group(process: anyio.abc.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)  # srun forwards it: the step's tasks end too


async def run_srun(
    argv: Sequence[str],
    on_node: Callable[[NodeStream], Coroutine[Any, Any, None]],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> SrunOutcome:
    """Run the step, calling ``on_node`` (concurrently) for each node's stream as it completes."""
    reader = FrameReader()
    stderr, timed_out = CappedOutput(64 * 1024), False
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return SrunOutcome(None, f"cannot start {argv[0]}: {exc.strerror or exc}", False, (), ())

    async def drain_stderr() -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            if process.stderr is not None:
                async for chunk in process.stderr:
                    stderr.add(chunk)

    async def read_frames(group: anyio.abc.TaskGroup) -> None:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        with contextlib.suppress(anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while True:
                try:
                    line = await lines.receive_until(b"\n", _MAX_LINE)
                except anyio.DelimiterNotFound:
                    continue
                stream = reader.feed(line.decode("ascii", errors="replace"))
                if stream is not None:
                    group.start_soon(on_node, stream)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(drain_stderr)
            with anyio.move_on_after(timeout_s) as scope:
                await read_frames(group)
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process)
    finally:
        await _reap(process)
    return SrunOutcome(process.returncode, stderr.text(), timed_out, tuple(reader.unfinished), tuple(reader.finished))


async def _reap(process: anyio.abc.Process) -> None:
    """End the step and its whole process group if it still runs (5 s to go, then killed), and close its pipes."""
    if process.returncode is None:
        _kill_group(process)
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        await process.aclose()
