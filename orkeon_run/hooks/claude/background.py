"""`async: true` hooks (docs/hooks.md, "Handler types"): started in the background, they
never change a decision. Each is bounded by its own time-out (run.py, handlers.py), its
time is charged to the ledger when it ends, and its run is recorded as a `hook.run` event
with `"async": true`. `drain()` awaits every one still running before the step's result
is written (runner.py); `drain(cancel=True)`, for a step cut short, cancels them and
records each one as cancelled.

A task of the running asyncio loop: anyio has no task that outlives the call that starts
it, and a task group around the whole step would put the hooks' runner in every caller's
way. orkeon always runs on anyio's asyncio backend. Starting one costs the call it rides
on the payload's encoding and a task's creation (bench/: `hooks-async`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .run import Ran


class Background:
    def __init__(self, record: Callable[[Ran, str, str], None]) -> None:
        """`record(ran, event, role)` is called once per hook, when it ends or is
        cancelled."""
        self._record = record
        self._tasks: dict[asyncio.Task[None], tuple[str, float, str, str]] = {}

    def start(
        self, run: Callable[[], Awaitable[Ran]], label: str, timeout: float, event: str, role: str
    ) -> None:
        """Start `run()` (made only once the task starts: a task cancelled before it
        started leaves no coroutine behind)."""

        async def one() -> None:
            ran = await run()
            ran.background = True
            self._record(ran, event, role)

        task = asyncio.get_running_loop().create_task(one())
        self._tasks[task] = (label, timeout, event, role)
        task.add_done_callback(self._tasks_done)

    def _tasks_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled():
            self._tasks.pop(task, None)

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self, *, cancel: bool = False) -> None:
        """Await (or cancel, recording each) the hooks still running."""
        while self._tasks:
            tasks = dict(self._tasks)
            if cancel:
                for task in tasks:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for task, (label, timeout, event, role) in tasks.items():
                if task.cancelled() and self._tasks.pop(task, None) is not None:
                    why = "cancelled: the step ended before it did"
                    ran = Ran(label, timeout, None, "", "", 0.0, False, why, background=True)
                    self._record(ran, event, role)
                self._tasks.pop(task, None)


__all__ = ["Background"]
