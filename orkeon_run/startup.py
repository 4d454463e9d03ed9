"""The cyclic garbage collector during start-up (docs/performance.md, "Start-up, after the
third round's merges").

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
"""

from __future__ import annotations

import gc

_paused: list[bool] = []


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


__all__ = ["pause", "resume"]
