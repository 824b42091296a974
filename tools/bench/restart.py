"""Arms that restart the server: a command brings it up in one configuration, then the endpoint must serve.

``bench ab --arm base='CMD' --arm fix='CMD'`` names each arm by the command that (re)starts the server
as that arm: a systemd unit's restart, a ``docker run``, a launch script. A switch runs the command
(through ``/bin/sh -c``, its own process group, its output appended to a log, within a deadline),
then waits until the endpoint streams the first tokens of a one-token request (a new connection each
try: the old server's connections are gone). A command that fails, overruns or leaves a server that
never answers is a :class:`SwitchFailed` naming the command and the last thing it said.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import anyio

from rigaudit.tools.bench.loadgen import REAL, Load, LoadSpec, endpoint, make_prompt, one_request, request_body, url_path
from rigaudit.tools.core.errors import OperationError, UsageError
from rigaudit.tools.core.record import Record

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
MAX_COMMAND = 4096
RETRY_S = 0.5
MIN_WAIT_S = 0.001


class SwitchFailed(OperationError):
    """A switch between arms (an apply, a rollback or a restart) did not verify, or the server stopped answering."""


class ArmCommand(Record):
    """An arm defined by the command that brings the server up as that arm."""

    name: str
    command: str


def parse_arms(texts: list[str]) -> list[ArmCommand]:
    """``NAME=CMD`` each (the first is the baseline); one clear line when they do not make two or more arms."""
    arms: list[ArmCommand] = []
    for text in texts:
        name, sep, command = text.partition("=")
        name, command = name.strip(), command.strip()
        if not sep or not command:
            raise UsageError(f"--arm wants NAME='COMMAND' (the command that starts the server as that arm), not {text!r}")
        if not NAME.match(name):
            raise UsageError(f"--arm name {name!r}: letters, digits, '.', '_' and '-' (at most 32), starting with one")
        if len(command) > MAX_COMMAND or "\x00" in command:
            raise UsageError(f"--arm {name}: the command is longer than {MAX_COMMAND} characters or holds a NUL")
        if any(a.name == name for a in arms):
            raise UsageError(f"--arm {name} is given twice")
        arms.append(ArmCommand(name, command))
    if len(arms) < 2:
        raise UsageError("bench ab with --arm wants two or more: --arm base='CMD as found' --arm fix='CMD with the change'")
    return arms


def _tail(log: Path) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 2000))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


async def run_command(arm: ArmCommand, *, log: Path, timeout_s: float) -> float:
    """Run the arm's command to its end within ``timeout_s``; its seconds. SwitchFailed when it fails or overruns
    (its process group is killed then: a server it left in the foreground goes too)."""
    start = anyio.current_time()
    with log.open("ab") as handle:
        handle.write(f"\n--- {arm.name}: {arm.command}\n".encode())
        handle.flush()
        process = await anyio.open_process(
            ["/bin/sh", "-c", arm.command],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with anyio.fail_after(timeout_s):
            code = await process.wait()
    except BaseException as exc:  # overrun, Ctrl-C or cancel: the command does not outlive its switch
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.wait()
        if isinstance(exc, TimeoutError):
            raise SwitchFailed(f"{arm.name}: the command did not finish within {timeout_s:g} s (see {log})") from None
        raise
    if code != 0:
        said = _tail(log)
        raise SwitchFailed(f"{arm.name}: the command exited {code}" + (f" ({said})" if said else "") + f"; see {log}")
    return anyio.current_time() - start


async def wait_ready(spec: LoadSpec, *, timeout_s: float, load: Load = REAL) -> float:
    """Seconds until the endpoint streams the first token of a one-token request; SwitchFailed after ``timeout_s``."""
    start = load.clock()
    deadline = start + timeout_s
    body = {**request_body(spec, make_prompt(8, -1, spec.seed)), "max_tokens": 1}
    path = url_path(endpoint(spec.base_url, spec.api))
    last = "no answer"
    while (left := deadline - load.clock()) > 0:
        async with load.connect(spec) as client:
            sample = await one_request(client, path, body, min(left, spec.timeout_s), load.clock)
        if sample.ok:
            return load.clock() - start
        last = sample.error or "no token"
        # At least a millisecond: a remainder too small to move the clock (float rounding) would never end the wait.
        await load.sleep(max(MIN_WAIT_S, min(RETRY_S, deadline - load.clock())))
    raise SwitchFailed(f"the server at {spec.base_url} served no token within {timeout_s:g} s ({last})")
