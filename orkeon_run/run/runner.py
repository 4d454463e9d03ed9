"""`orkeon run`: inputs -> run configuration -> run directory -> the step -> result.

`open_run` does everything that can fail on bad input (exit 2) before anything is
written, then opens the run directory; `execute` runs the step in the caller's event loop
and is the one place that turns its outcome (or an exception) into the result document
and the exit code; `run` does both for one command. SIGINT and SIGTERM cancel the step:
no new call starts, what finished is kept, the result says "interrupted", exit 130. The
MCP servers the crew names run for the step's whole length (run/mcp.py) and are stopped
after SIGINT/SIGTERM too.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .. import logs
from ..environ import Redactor
from ..errors import RecordsError
from ..events import EventLog
from ..ledger import Ledger
from ..vocabulary import StepStatus

if TYPE_CHECKING:
    import anyio
from .context import StepOutcome, StepRun, step_hooks
from .prepare import RunConfig, prepare, stdin_tty
from .records import RunLock, RunRecords, check_seals_dir, pin
from .result import result_document
from .rundir import (
    Resumed,
    default_run_dir,
    leave_gitignore,
    new_run_dir,
    new_run_id,
    resolve,
    resumed_run,
    save_inputs,
)
from .steps import step_module


@dataclass
class OpenRun:
    """A prepared run with its directory: what `execute` needs. `failure` is set when the
    run directory could not be written (a full disk, a read-only workspace): `execute`
    then only reports it, as the result of status "error"."""

    config: RunConfig
    run_dir: Path
    run_id: str
    resume: bool
    state: dict[str, Any]
    events: EventLog
    environ: Mapping[str, str] | None = None
    # What watches the run's events: its progress view and its trace exporter, each with a
    # `close()` (the final summary; the traces flushed, bounded in time).
    watchers: list[Any] = field(default_factory=list)
    records: RunRecords | None = None
    lock: RunLock | None = None
    failure: RecordsError | None = None
    # The run directory no role may write: this one, or for a pipeline's step (in
    # PIPELINE_DIR/steps/NAME/) the pipeline's, which holds it.
    guarded: Path | None = None


def open_run(
    step: str,
    doc: Any,
    *,
    workspace: str | None,
    run_dir: str | None,
    resume_dir: str | None,
    stream: IO[str] | None,
    environ: Mapping[str, str] | None = None,
    progress: str = "none",
    flags: Mapping[str, str | None] | None = None,
    nested: bool = False,
) -> OpenRun:
    """Prepare the run and open its directory. Input problems raise InputError (exit 2)
    before anything is written; so does a run directory another run holds, or a resumed
    one whose records are not the ones its run wrote (records.py). A run directory the
    disk refuses is no exception: the OpenRun carries the `failure`. `progress` (live,
    plain, none) is shown on stderr; traces are exported when the OTEL_* variables ask for
    them (run/telemetry.py). `flags` are the command line's knobs (prepare.py). `nested`:
    a step of a pipeline, whose knobs, warnings, progress and traces are the pipeline's
    (steps/pipeline.py)."""
    step_module(step)  # an unknown step is a usage error before anything is read
    resumed: Resumed | None = None
    try:
        if resume_dir is not None:
            resumed = resumed_run(resolve(resume_dir), step, doc, environ)
            doc = resumed.doc
        config = prepare(
            doc,
            step=step,
            workspace=workspace,
            environ=environ,
            stdin_is_tty=stdin_tty(),
            flags=flags,
            knobs=not nested,
            hook_files="skip" if nested else "warn",
            pinned=resumed.pinned if resumed else None,
        )
        if not nested:
            for line in config.warnings:
                logs.warn(line)
        check_seals_dir(config.workspace, environ)
        redactor = Redactor.from_environ(environ, config.key_env)
        logs.redact(redactor.secrets)
        if resumed is None:
            run_id = new_run_id()
            rd = resolve(run_dir) if run_dir else default_run_dir(config.workspace, run_id)
            state: dict[str, Any] = {"run_id": run_id, "step": step}
            if config.plan is not None:  # the plan as it is now: --resume and repairs run it
                state["plan"] = pin(config.plan, config.plan_rel)
        else:
            rd, state = resumed.records.run_dir, resumed.state
            run_id = state.get("run_id") or rd.name
    except BaseException:
        if resumed is not None:
            resumed.lock.release()
        raise
    lock = resumed.lock if resumed else None
    try:
        if resumed is None:
            lock, records = new_run_dir(rd, run_id, environ)
            if not nested:
                leave_gitignore(config.workspace, rd)
        else:
            records = resumed.records
        records.redactor = redactor if redactor else None
        saved = resumed.saved_inputs if resumed else None
        save_inputs(records, config.doc, resumed is not None, saved)
        records.write("state.json", state)
        events = EventLog(rd / "events.jsonl", stream, redactor)
    except BaseException as exc:
        if lock is not None:
            lock.release()
        if not isinstance(exc, RecordsError):
            raise
        unrecorded = EventLog(None, stream, redactor)
        resume = resumed is not None
        return OpenRun(config, rd, run_id, resume, state, unrecorded, environ, failure=exc)
    watchers = [] if nested else _watchers(progress)
    events.listeners.extend(watchers)
    return OpenRun(
        config,
        rd,
        run_id,
        resumed is not None,
        state,
        events,
        environ,
        watchers,
        records=records,
        lock=lock,
        guarded=rd.parent.parent if nested else rd,
    )


def _watchers(progress: str) -> list[Any]:
    from . import progress as progress_view
    from . import telemetry

    watchers = progress_view.listeners(progress)
    traces = telemetry.from_environ()
    return [*watchers, traces] if traces is not None else watchers


def run(
    step: str,
    doc: Any,
    *,
    workspace: str | None,
    run_dir: str | None,
    resume_dir: str | None,
    stream: IO[str] | None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run one step; return the result document."""
    import anyio

    opened = open_run(step, doc, workspace=workspace, run_dir=run_dir,
                      resume_dir=resume_dir, stream=stream, environ=environ)  # fmt: skip
    return anyio.run(execute, opened)


async def run_async(
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
    hidden: Sequence[Path] = (),
) -> dict[str, Any]:
    """`run` inside a running event loop, so that many runs can share one (`orkeon jobs
    run`, docs/scale.md). The preparation runs in the loop's thread and blocks it briefly.
    `hidden`: more folders every sandbox of the run hides (a job's whole output folder)."""
    opened = open_run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume_dir,
        stream=stream,
        environ=environ,
    )
    opened.config = replace(opened.config, confinement=opened.config.confinement.hiding(hidden))
    return await execute(opened, watch_signals=watch_signals, stop=stop)


async def execute(
    opened: OpenRun, *, watch_signals: bool = True, stop: anyio.Event | None = None
) -> dict[str, Any]:
    """Run the opened step to its end; write result.json; return the result document.
    With `watch_signals`, SIGINT and SIGTERM interrupt it. A caller running several runs in
    one loop watches them itself and sets `stop`, which ends the run as a signal would: no
    new call starts, what finished is kept, the result says "interrupted". Cancelled from
    outside, the run still leaves that result before the cancellation goes on."""
    import anyio

    from ..models import build_provider

    config = opened.config
    step = config.step
    assert step is not None
    events = opened.events
    ledger = Ledger(config.budget)
    if opened.failure is not None:
        # The run directory could not be written: nothing ran; say why, on stdout too.
        try:
            outcome = StepOutcome(status="error", error=str(opened.failure))
            result = result_document(opened.run_id, step, outcome, ledger, config.confinement.state)
            events.emit_final("result", **result)
            return result
        finally:
            for watcher in opened.watchers:
                watcher.close()
    sr = StepRun(
        config=config,
        run_dir=opened.run_dir,
        run_id=opened.run_id,
        ledger=ledger,
        events=events,
        provider=build_provider(config.inputs.model, environ=opened.environ),
        hooks=step_hooks(config, events),
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
            )
            log.info("step started", step=step, run_id=sr.run_id, run_dir=str(sr.run_dir))
            outcome = await _outcome(sr, watch_signals, stop, opened.environ)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await _finish(sr, _partial(sr, "interrupted", "interrupted"))
            raise
        except RecordsError as exc:  # run.start could not be written
            outcome = _partial(sr, "error", str(exc))
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
    import anyio
    import anyio.abc

    from .mcp import run_servers

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
                # also when a signal cancels the run (run/mcp.py).
                async with run_servers(sr, environ):
                    outcome = await module.run(sr)
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
    result = result_document(sr.run_id, sr.step, outcome, sr.ledger, sr.sandbox, sr.mcp_sandbox)
    try:
        sr.write_record("result.json", result)
    except RecordsError as exc:
        if result["status"] != "error":
            failed = StepOutcome(status="error", roles=outcome.roles, error=str(exc))
            result = result_document(
                sr.run_id, sr.step, failed, sr.ledger, sr.sandbox, sr.mcp_sandbox
            )
        logs.get().error("the run cannot write its records", error=str(exc))
    if sr.events.redactor is not None:
        result = sr.events.redactor.value(result)
    sr.events.emit_final("result", **result)
    logs.get().info(
        "step ended", step=sr.step, status=result["status"], exit_code=result["exit_code"]
    )
    return result


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
