"""The console script's start and end: the cyclic garbage collector during start-up, and
what must end before the process leaves (docs/performance.md, "Start-up, after the third
round's merges").

Start-up makes some hundred thousand objects that live as long as the process (modules,
classes, functions, pydantic's validators and schemas), and the collector's young
collections scan each of them on its way to the oldest generation: 22 to 32 ms, 6 to 7 %
of a short run's CPU or of `orkeon validate`'s. `pause` turns the collector off while the
command line and the command's modules load (the console script only: a program that calls
`main()` keeps its collector as it is); `resume`, where a command starts its work
(cli/base.py, `exit_with`), moves what start-up made to the permanent generation
(`gc.freeze`: never scanned again) and turns the collector back on, so a run of any length
collects its own garbage as before. Nothing is collected sooner or later than a run's
behaviour depends on: orkeon closes what it opens, it does not wait for the collector.

The console script leaves with `os._exit` (__main__.entry), without the interpreter's
teardown and so without `atexit`. What must not outlive the command (the kept-up sandboxes
and the hooks' veil, each a bubblewrap orkeon started) registers its end with `at_leave`:
`leave` runs it, and orkeon waits for those processes before it exits, so none lingers on
its parent-death signal and their CPU time is counted with orkeon's (the benchmarks read
it from `wait4`). `at_leave` also registers with `atexit`, for a program that embeds
`main()`.
"""

from __future__ import annotations

import atexit
import gc

# Imported before the pause: nothing here may import a module the interpreter has not
# (collections, typing), or the collector scans what that import makes.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_paused: list[bool] = []
_leaving: list[Callable[[], None]] = []


def pause() -> None:
    """Turn the collector off until `resume` (no-op where it is off already)."""
    if gc.isenabled() and not _paused:
        gc.disable()
        _paused.append(True)


def resume() -> None:
    """After `pause`: freeze what exists now and turn the collector back on; else no-op."""
    if _paused:
        _paused.clear()
        gc.freeze()
        gc.enable()


def at_leave(end: Callable[[], None]) -> Callable[[], None]:
    """Run `end` when the process leaves (`leave`, else `atexit`); returns it (a decorator).
    `end` must be safe to call twice: an embedding program may call `leave` too."""
    _leaving.append(end)
    atexit.register(end)
    return end


def leave() -> None:
    """Run every `at_leave` function, last registered first, as `atexit` would; one that
    fails does not keep the others from running."""
    while _leaving:
        end = _leaving.pop()
        try:  # noqa: SIM105 - contextlib would import collections before the pause
            end()
        except Exception:  # leaving: nothing can be done about it but go on
            pass


__all__ = ["at_leave", "leave", "pause", "resume"]
