"""Fleet progress on the terminal: one bar for the whole fleet, a line for each host that fails."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from rigaudit.orchestrator.fleet.events import (
    FleetEvent,
    FleetFinished,
    FleetStarted,
    HostCollected,
    HostConnecting,
    HostFailed,
    HostJudged,
)


class FleetProgress:
    """A callable event consumer. ``live=False`` prints a plain line per host (pipes, CI, ``--no-live``)."""

    def __init__(self, console: Console, *, live: bool) -> None:
        self.console = console
        self.live = live and console.is_terminal
        self.total: int | None = None
        self.done = 0
        self.failed = 0
        self.collecting = 0
        self.judging = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def _describe(self) -> str:
        return f"hosts done · {self.failed} failed · {self.collecting} collecting · {self.judging} judging"

    def _update(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.done, total=self.total, description=self._describe())

    def _say(self, text: str) -> None:
        console = self._progress.console if self._progress is not None else self.console
        console.print(text, highlight=False, soft_wrap=True)

    def __call__(self, event: FleetEvent) -> None:
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
                what = f"{len(event.targets)} host(s)" if event.targets else "the nodes Slurm allocates"
                self._say(f"fleet: auditing {what} ({event.kind})")
        elif isinstance(event, HostConnecting):
            self.collecting += 1
        elif isinstance(event, HostCollected):
            self.collecting = max(0, self.collecting - 1)
            self.judging += 1
            if not self.live:
                size = f", {event.size_bytes / 1024:.0f} KiB" if event.size_bytes else ""
                self._say(f"fleet: {escape(event.target)}: collected ({event.mode}{size}, {event.seconds:.1f} s)")
        elif isinstance(event, HostJudged):
            self.done += 1
            self.judging = max(0, self.judging - 1)
            if not self.live:
                self._say(f"fleet: {escape(event.target)}: audited, {event.problems} problem(s)")
        elif isinstance(event, HostFailed):
            self.done += 1
            self.failed += 1
            if event.stage == "audit":
                self.judging = max(0, self.judging - 1)
            else:
                self.collecting = max(0, self.collecting - 1)
            self._say(f"[red]fleet: {escape(event.target)}: {event.stage} failed:[/red] {escape(event.error)}")
        elif isinstance(event, FleetFinished):
            self.close()
        if self.total is not None and self.done > self.total:
            self.total = self.done
        self._update()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
