"""``rigaudit ARGS`` in a new process whose apply waits on a FIFO after its N-th applied step, for a test to kill or
interrupt it there (between two steps) and then let it go on.

The pause goes in through :func:`~rigaudit.orchestrator.change.apply.apply_plan`'s ``after_step`` seam, on the name
``run_apply`` calls, as the other seams' tests do; the command line is otherwise the real one. ``[sys.executable,
*program(fifo, n), *args]`` starts it; it writes ``paused after N`` into the FIFO and waits until the test opens the
FIFO for writing and closes it.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from rigaudit.orchestrator.change.apply import StepReport

ROOT = Path(__file__).resolve().parents[2]


def program(fifo: Path, after: int) -> list[str]:
    """The interpreter's arguments (before rigaudit's) for a run that pauses after step ``after`` on ``fifo``."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.support.paused_apply import main; sys.exit(main())"
    return ["-c", code, str(fifo), str(after)]


@dataclass
class Pause:
    """An ``after_step`` that waits on ``fifo`` after the ``after``-th step."""

    fifo: Path
    after: int
    done: int = 0

    async def __call__(self, step: StepReport) -> None:
        self.done += 1
        if self.done == self.after:
            await anyio.to_thread.run_sync(self._wait)

    def _wait(self) -> None:
        with open(self.fifo, "w", encoding="utf-8") as handle:
            handle.write(f"paused after {self.done}\n")
        with open(self.fifo, encoding="utf-8") as handle:
            handle.read()


def main() -> int:
    from rigaudit.orchestrator.change import apply_run
    from rigaudit.orchestrator.change.apply import apply_plan
    from rigaudit.orchestrator.cli import main as rigaudit

    fifo, after, *args = sys.argv[1:]
    apply_run.apply_plan = functools.partial(apply_plan, after_step=Pause(Path(fifo), int(after)))  # type: ignore[assignment]
    return rigaudit(args)
