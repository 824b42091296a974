"""SandboxedShell: the one shell-like tool an agent (an LLM) is given.

A command arrives as the model wrote it. The policy vets it before anything runs: ``deny`` is
never run (the reason goes back to the model so it can rewrite the command), ``ask`` runs only if
the approver callback says yes (no approver means no), ``allow`` runs. Running is always
``host.run(argv)``, never a shell, time-limited, and its output capped keeping head and tail.

Paths are vetted where they lead on the host that runs the command (:func:`filesystem_for`: this
machine's links for a ``LocalHost``). Judging looks at the file system (``lstat``), which a hung
mount could stall: it runs in a worker thread and is given up, as a ``deny``, after
:data:`VET_TIMEOUT_S`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import anyio

from rigaudit.tools.core import record
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.base import CommandResult, Host
from rigaudit.tools.policy import Verdict, filesystem_for, vet_command_line

Approver = Callable[[Verdict], Awaitable[bool]]
"""Asked about an ``ask`` verdict; returns True only when a person approved this very command."""

CUT_MARK = "\n[... {cut} characters cut ...]\n"
VET_TIMEOUT_S = 5.0
"""How long vetting one command may take (it looks up each path it names) before it is refused."""


def cap_text(text: str, cap: int) -> tuple[str, int]:
    """``text`` kept within ``cap`` characters: its head and tail around a note of how much was cut."""
    if len(text) <= cap:
        return text, 0
    mark_len = len(CUT_MARK.format(cut=len(text)))
    room = max(cap - mark_len, 0)
    head = room * 2 // 3
    tail = room - head
    cut = len(text) - head - tail
    return text[:head] + CUT_MARK.format(cut=cut) + (text[len(text) - tail :] if tail else ""), cut


class ShellOutcome(Record):
    """What became of one command: the verdict, and the result when it ran."""

    command: str
    verdict: Verdict
    result: CommandResult | None = None
    approved: bool | None = None
    """For ``ask``: whether the approver said yes (``None`` when nobody was asked)."""
    note: str = ""

    @property
    def ran(self) -> bool:
        return self.result is not None

    def for_model(self) -> str:
        """The text handed back to the model."""
        v = self.verdict
        if self.result is None:
            if v.decision == "ask":
                why = self.note or "the person did not approve it"
                return f"not run: needs approval ({v.reason}); {why}."
            return f"not run: {v.decision} ({v.reason}). Rewrite it as one plain read-only command, or leave it."
        r = self.result
        status = f"error: {r.error}" if r.error else f"exit status {r.exit_code}"
        parts = [f"$ {' '.join(r.argv)}  ({status}, {r.duration_s:.2f} s)"]
        if r.stdout:
            parts.append(r.stdout.rstrip("\n"))
        if r.stderr:
            parts.append("[stderr]\n" + r.stderr.rstrip("\n"))
        return "\n".join(parts)


class SandboxedShell:
    """Judges, then (maybe) runs, commands on ``host`` for an agent."""

    def __init__(
        self,
        host: Host,
        policy: Callable[[str], Verdict] | None = None,
        ask: Approver | None = None,
        timeout_s: float = 10.0,
        output_cap: int = 16000,
    ) -> None:
        self.host = host
        self.policy = policy or functools.partial(vet_command_line, fs=filesystem_for(host))
        self.ask = ask
        self.timeout_s = timeout_s
        self.output_cap = max(output_cap, 200)

    async def vet(self, command: str) -> Verdict:
        """The policy's verdict, reached off the event loop and refused if the file system does not answer in time."""
        with anyio.move_on_after(VET_TIMEOUT_S):
            return await anyio.to_thread.run_sync(self.policy, command, abandon_on_cancel=True)
        return Verdict(
            "deny", f"vetting its paths took over {VET_TIMEOUT_S:g} s (a hung file system?): refused", rule="policy-timeout"
        )

    async def execute(self, command: str) -> ShellOutcome:
        verdict = await self.vet(command)
        if verdict.decision == "deny" or not verdict.argv:
            if verdict.decision != "deny":
                verdict = Verdict("deny", f"{verdict.reason} (no argv to run)", verdict.argv, verdict.rule)
            return ShellOutcome(command, verdict)
        approved: bool | None = None
        if verdict.decision == "ask":
            if self.ask is None:
                return ShellOutcome(command, verdict, approved=False, note="no one is here to approve it")
            try:
                approved = bool(await self.ask(verdict))
            except Exception as exc:  # a failing approver is a refusal, never a yes
                return ShellOutcome(command, verdict, approved=False, note=f"approval failed ({exc.__class__.__name__})")
            if not approved:
                return ShellOutcome(command, verdict, approved=False)
        result = await self.host.run(verdict.argv, timeout_s=self.timeout_s)
        return ShellOutcome(command, verdict, self._capped(result), approved)

    def _capped(self, result: CommandResult) -> CommandResult:
        stdout, cut_out = cap_text(result.stdout, self.output_cap)
        stderr, cut_err = cap_text(result.stderr, max(self.output_cap // 4, 200))
        if not cut_out and not cut_err:
            return result
        return record.replace(result, stdout=stdout, stderr=stderr, truncated=result.truncated + cut_out + cut_err)
