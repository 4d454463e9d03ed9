"""`orkeon run`: inputs -> run configuration -> run directory -> the step -> result.

`open_run` (opening.py) does everything that can fail on bad input (exit 2) before
anything is written, then opens the run directory; `execute` runs the step in the caller's event loop
and is the one place that turns its outcome (or an exception) into the result document
and the exit code; `run` does both, in the running event loop. SIGINT and SIGTERM cancel the step:
no new call starts, what finished is kept, the result says "interrupted", exit 130. The
MCP servers the crew names run for the step's whole length (run/mcp.py) and are stopped
after SIGINT/SIGTERM too.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc

from .. import logs
from ..errors import RecordsError
from ..ledger import Ledger
from ..models import build_provider
from ..tools import sandbox
from ..units import limits_text, spent_of
from ..vocabulary import BUDGET_WORDS, StepStatus
from .context import StepOutcome, StepRun, step_hooks
from .document import result_document
from .opening import OpenRun, open_run
from .steps import step_module


async def run(
    step: str,
    doc: Any,
    *,
    workspace: str | None,
    run_dir: str | None,
    resume_dir: str | None,
    stream: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
    watch_signals: bool = True,
    stop: anyio.Event | None = None,
    share: Mapping[str, float] | None = None,
    hidden: Sequence[Path] = (),
    bare: bool = False,
) -> dict[str, Any]:
    """Run one step in the running event loop (`anyio.run(partial(run, ...))` for one
    command; many runs share one loop in `orkeon jobs run`, docs/scale.md); return the
    result document. The preparation runs in the loop's thread and blocks it briefly.
    `watch_signals`, `stop` and `share` are `execute`'s. `hidden`: more folders every
    sandbox of the run hides (a job's whole output folder). `bare`: read no configuration
    the inputs do not name (config/sources.py)."""
    opened = open_run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume_dir,
        stream=stream,
        environ=environ,
        bare=bare,
    )
    opened.config = replace(opened.config, confinement=opened.config.confinement.hiding(hidden))
    return await execute(opened, watch_signals=watch_signals, stop=stop, share=share)


async def execute(
    opened: OpenRun,
    *,
    watch_signals: bool = True,
    stop: anyio.Event | None = None,
    share: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """`_execute`, its log records also in RUN_DIR/logs.jsonl (logs.to_file)."""
    started = logs.to_file(opened.run_dir / "logs.jsonl") if opened.failure is None else None
    try:
        return await _execute(opened, watch_signals=watch_signals, stop=stop, share=share)
    finally:
        if started is not None:
            logs.end_file(started)
        # The audit's git keeps a sandbox up for the run: none outlives it.
        sandbox.release_workspace(opened.config.workspace)
        if opened.config.sources is not None:  # a bare run's own plugin data folder
            opened.config.sources.release()


async def _execute(
    opened: OpenRun,
    *,
    watch_signals: bool = True,
    stop: anyio.Event | None = None,
    share: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Run the opened step to its end; write result.json; return the result document.
    With `watch_signals`, SIGINT and SIGTERM interrupt it. A caller running several runs in
    one loop watches them itself and sets `stop`, which ends the run as a signal would: no
    new call starts, what finished is kept, the result says "interrupted". Cancelled from
    outside, the run still leaves that result before the cancellation goes on. `share`: a
    job's part of the batch's cap (`orkeon jobs run --max-usd`, jobs/cap.py): no limit of
    the step's budget is above it."""
    config = opened.config
    step = config.step
    assert step is not None
    events = opened.events
    earlier = opened.earlier
    ledger = Ledger(config.budget.capped(_beyond(share, earlier)))
    if earlier is not None:
        ledger.seed(earlier)
    if opened.failure is not None:
        # The run directory could not be written: nothing ran; say why, on stdout too.
        try:
            outcome = StepOutcome(status="error", error=str(opened.failure))
            state = config.confinement.state
            result = result_document(opened.run_id, step, outcome, ledger, state, bare=config.bare)
            events.emit_final("result", **result)
            return result
        finally:
            for watcher in opened.watchers:
                watcher.close()
    provider = build_provider(config.inputs.model, environ=opened.environ)
    sr = StepRun(
        config=config,
        run_dir=opened.run_dir,
        run_id=opened.run_id,
        ledger=ledger,
        events=events,
        provider=provider,
        hooks=step_hooks(config, events, provider, opened.environ),
        resume=opened.resume,
        state=opened.state,
        environ=opened.environ,
        records=opened.records,
        guarded_dir=opened.guarded,
    )
    log = logs.get()
    try:
        try:
            events.emit(
                "run.start",
                run_id=sr.run_id,
                step=step,
                workspace=str(config.workspace),
                run_dir=str(sr.run_dir),
                resume=sr.resume,
                budget=ledger.limits.to_json(),
                **_earlier(ledger),
            )
            limits = limits_text(ledger.limits.model_dump())
            log.info(
                "step started", step=step, run_id=sr.run_id, run_dir=str(sr.run_dir), budget=limits
            )
            outcome = await _outcome(sr, watch_signals, stop, opened.environ)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await sr.hooks.drain(cancel=True)
                await _finish(sr, _partial(sr, "interrupted", "interrupted"))
            raise
        except RecordsError as exc:  # run.start could not be written
            outcome = _partial(sr, "error", str(exc))
        # `async: true` hooks end (each within its own time-out) before the result.
        await sr.hooks.drain(cancel=outcome.status == "interrupted")
        return await _finish(sr, outcome)
    finally:
        events.close()
        for watcher in opened.watchers:
            watcher.close()
        if opened.lock is not None:
            opened.lock.release()


async def _outcome(
    sr: StepRun,
    watch_signals: bool,
    stop: anyio.Event | None,
    environ: Mapping[str, str] | None = None,
) -> StepOutcome:
    log = logs.get()
    module = step_module(sr.step)
    outcome: StepOutcome | None = None
    interrupted = False
    try:
        async with anyio.create_task_group() as tg:

            async def watch(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    task_status.started()
                    async for signum in signals:
                        interrupted = True
                        log.warning("interrupted; stopping the roles", signal=signum)
                        tg.cancel_scope.cancel()
                        return

            async def stopped(event: anyio.Event) -> None:
                nonlocal interrupted
                await event.wait()
                interrupted = True
                tg.cancel_scope.cancel()

            async def body() -> None:
                nonlocal outcome
                # The MCP servers start before the first role and stop after the last,
                # also when a signal cancels the run (run/mcp.py). A run without servers
                # does not load the MCP modules at all (tests/commands/test_imports.py).
                # Likewise a run without `patch` does not load the patch's modules
                # (git's diff, the scan, the file; docs/performance.md).
                patching = sr.config.patch is not None
                if patching:
                    from . import patch_out

                    patch_out.begin(sr)
                if not sr.config.mcp_needed:
                    outcome = await module.run(sr)
                else:
                    from .mcp import run_servers

                    async with run_servers(sr, environ):
                        outcome = await module.run(sr)
                if patching:
                    outcome = await patch_out.finish(sr, outcome)
                tg.cancel_scope.cancel()

            if watch_signals:
                # Watching before any server starts: a server runs in a session of its
                # own, so only orkeon's handling of the signal stops it.
                await tg.start(watch)
            if stop is not None:
                tg.start_soon(stopped, stop)
            tg.start_soon(body)
    except Exception as exc:  # a bug, or a failure no step handled: still leave a result
        cause = _first_cause(exc)
        if isinstance(cause, RecordsError):  # a full disk: said in words, no traceback
            log.error("the run cannot write its records", error=str(cause))
            outcome = _partial(sr, "error", str(cause))
        else:
            log.error("step crashed", exc_info=cause)
            outcome = _partial(sr, "error", f"{type(cause).__name__}: {cause}")
    finally:
        # The provider's HTTP client is closed inside the loop that opened it.
        with anyio.move_on_after(5, shield=True):
            await sr.provider.aclose()
    if outcome is None or interrupted:
        return _partial(sr, "interrupted", "interrupted by a signal")
    failure = sr.events.failure
    if failure is not None and outcome.status != "error":
        # An event that could not be written, the step going on past it: not a run whose
        # records can be trusted.
        return _partial(sr, "error", str(failure))
    return outcome


async def _finish(sr: StepRun, outcome: StepOutcome) -> dict[str, Any]:
    """Write the result (result.json, the `result` event) and return it. A result.json the
    disk refuses makes the run's status "error" with that cause; the document is returned
    (and printed) all the same."""
    pins, net, boxed, bare = sr.unpinned, sr.network, sr.mcp_sandbox, sr.config.bare
    result = result_document(
        sr.run_id, sr.step, outcome, sr.ledger, sr.sandbox, pins, net, boxed, bare
    )
    try:
        sr.write_record("result.json", result)
    except RecordsError as exc:
        if result["status"] != "error":
            failed = StepOutcome(status="error", roles=outcome.roles, error=str(exc))
            result = result_document(
                sr.run_id, sr.step, failed, sr.ledger, sr.sandbox, pins, net, boxed, bare
            )
        logs.get().error("the run cannot write its records", error=str(exc))
    if sr.events.redactor is not None:
        result = sr.events.redactor.value(result)
    sr.events.emit_final("result", **result)
    logs.get().info(
        "step ended", step=sr.step, status=result["status"], exit_code=result["exit_code"]
    )
    return result


def _beyond(
    share: Mapping[str, float] | None, earlier: Mapping[str, Any] | None
) -> Mapping[str, float] | None:
    """A job's share of the batch's cap (jobs/cap.py) is for this attempt; the ledger of a
    resumed job counts its earlier attempts too, so its limits get them on top."""
    if not share or earlier is None:
        return share
    spent = {
        "usd": float(earlier.get("usd") or 0.0),
        "tokens": float((earlier.get("tokens_in") or 0) + (earlier.get("tokens_out") or 0)),
        "seconds": float(earlier.get("used_seconds") or 0.0),
    }
    return {k: v + spent.get(k, 0.0) for k, v in share.items()}


def _earlier(ledger: Ledger) -> dict[str, Any]:
    """`run.start`'s `earlier` and `attempt` on a resumed run (what the earlier attempts
    spent: the budget spans attempts); a warning when they spent a limit already, so the
    exit 3 that follows is no surprise."""
    earlier = ledger.earlier_spent()
    if earlier is None:
        return {}
    which = ledger.spent()
    if which is not None:
        logs.warn(
            f"--resume: the earlier attempts spent the {BUDGET_WORDS[which]} budget "
            f"({spent_of(which, earlier[which], getattr(ledger.limits, which))}); "
            "the budget spans attempts: give a higher limit to go on"
        )
    return {"earlier": earlier, "attempt": ledger.attempts}


def _partial(sr: StepRun, status: StepStatus, error: str) -> StepOutcome:
    """The outcome of a step that did not finish: each role that started, as it stood."""
    if sr.partial is not None:
        return sr.partial(status, error)
    roles = [a.result for a in sr.agents.values() if a.turns or a.calls]
    return StepOutcome(status=status, roles=roles, error=error)


def _first_cause(exc: BaseException) -> BaseException:
    """The exception a task group wrapped (`ExceptionGroup: unhandled errors in a
    TaskGroup` names nothing a person can act on)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
