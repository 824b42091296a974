"""A fleet audit on the terminal: one bar for the whole fleet, a line for each host that fails, the summary."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from rigaudit.tools.schema.events.fleet import FleetFinished, FleetStarted, HostAudited, HostCollected, HostConnecting, HostFailed
from rigaudit.tools.schema.events.union import Event

FLEET_EVENTS = (FleetStarted, HostConnecting, HostCollected, HostAudited, HostFailed, FleetFinished)


class FleetProgress:
    """Draws the fleet's events (the terminal UI hands them over). ``live=False`` prints a line per host."""

    def __init__(self, console: Console, *, live: bool) -> None:
        self.console = console
        self.live = live and console.is_terminal
        self.total: int | None = None
        self.done = 0
        self.failed = 0
        self.collecting = 0
        self.auditing = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def _describe(self) -> str:
        return f"hosts done · {self.failed} failed · {self.collecting} collecting · {self.auditing} auditing"

    def _update(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.done, total=self.total, description=self._describe())

    def _say(self, text: str) -> None:
        console = self._progress.console if self._progress is not None else self.console
        console.print(text, highlight=False, soft_wrap=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, FleetStarted):
            self.total = len(event.targets) or None
            if self.live:
                self._progress = Progress(
                    TextColumn("[bold]fleet[/bold]"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.description}"),
                    TimeElapsedColumn(),
                    console=self.console,
                    transient=True,
                )
                self._progress.start()
                self._task = self._progress.add_task(self._describe(), total=self.total)
            else:
                nodes = "the gathered result files" if event.kind == "gathered" else "the nodes Slurm allocates"
                what = f"{len(event.targets)} host(s)" if event.targets else nodes
                self._say(f"fleet: auditing {what} ({event.kind})")
        elif isinstance(event, HostConnecting):
            self.collecting += 1
        elif isinstance(event, HostCollected):
            self.collecting = max(0, self.collecting - 1)
            self.auditing += 1
            if not self.live:
                size = f", {event.size_bytes / 1024:.0f} KiB" if event.size_bytes else ""
                self._say(f"fleet: {escape(event.target)}: collected ({event.mode}{size}, {event.seconds:.1f} s)")
        elif isinstance(event, HostAudited):
            self.done += 1
            self.auditing = max(0, self.auditing - 1)
            if not self.live:
                self._say(f"fleet: {escape(event.target)}: audited, {event.problems} problem(s)")
        elif isinstance(event, HostFailed):
            self.done += 1
            self.failed += 1
            if event.stage == "audit":
                self.auditing = max(0, self.auditing - 1)
            else:
                self.collecting = max(0, self.collecting - 1)
            self._say(f"[red]fleet: {escape(event.target)}: {event.stage} failed:[/red] {escape(event.error)}")
        elif isinstance(event, FleetFinished):
            self.close()
            self._summary(event)
        if self.total is not None and self.done > self.total:
            self.total = self.done
        self._update()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _summary(self, event: FleetFinished) -> None:
        self.console.print(
            f"[bold]fleet[/bold]: {event.audited} of {event.hosts} host(s) audited in {event.duration_s:.1f} s, "
            f"{len(event.failures)} failed, {event.differ} differ from their peers, {event.fixes} distinct fix(es)",
            soft_wrap=True,
        )
        for failure in event.failures:
            self.console.print(
                f"  [red]failed[/red] {escape(failure.target)} ({failure.stage}): {escape(failure.error)}", soft_wrap=True
            )
        for line in event.outliers:
            self.console.print(f"  [yellow]outlier[/yellow] {escape(line)}", soft_wrap=True, highlight=False)
        for warning in event.warnings:
            self.console.print(f"  [yellow]warning[/yellow] {escape(warning)}", soft_wrap=True, highlight=False)
