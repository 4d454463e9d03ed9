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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .. import logs
from ..events import EventLog
from ..jsonio import atomic_write_json
from ..ledger import Ledger
from ..vocabulary import StepStatus

if TYPE_CHECKING:
    import anyio
from .context import StepOutcome, StepRun, step_hooks
from .prepare import RunConfig, prepare, stdin_tty
from .result import result_document
from .rundir import (
    leave_gitignore,
    new_run_id,
    read_state,
    resolve,
    resume_document,
    save_inputs,
)
from .steps import step_module


@dataclass
class OpenRun:
    """A prepared run with its directory: what `execute` needs."""

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
    before anything is written. `progress` (live, plain, none) is shown on stderr; traces
    are exported when the OTEL_* variables ask for them (run/telemetry.py). `flags` are
    the command line's knobs (prepare.py). `nested`: a step of a pipeline, whose knobs,
    warnings, progress and traces are the pipeline's (steps/pipeline.py)."""
    step_module(step)  # an unknown step is a usage error before anything is read
    resume = resume_dir is not None
    state: dict[str, Any] = {}
    if resume_dir is not None:
        rd = resolve(resume_dir)
        doc = resume_document(rd, doc)
        state = read_state(rd)
        if state.get("step", step) != step:
            from ..errors import UsageError

            raise UsageError(f"--resume: {rd} is a {state['step']} run, not {step}")
    config = prepare(
        doc,
        step=step,
        workspace=workspace,
        environ=environ,
        stdin_is_tty=stdin_tty(),
        flags=flags,
        knobs=not nested,
        hook_files="skip" if nested else "warn",
    )
    if not nested:
        for line in config.warnings:
            logs.warn(line)
    if resume_dir is None:
        run_id = new_run_id()
        rd = resolve(run_dir) if run_dir else config.workspace / ".orkeon" / "runs" / run_id
        if (rd / "inputs.json").exists():
            from ..errors import UsageError

            raise UsageError(f"--run-dir: already holds a run (use --resume to continue it): {rd}")
        state = {"run_id": run_id, "step": step}
        if not nested:
            leave_gitignore(config.workspace, rd)
    else:
        run_id = state.get("run_id") or rd.name
    rd.mkdir(parents=True, exist_ok=True)
    config = _confined(config, rd)
    save_inputs(rd, config.doc, resume)
    atomic_write_json(rd / "state.json", state)
    events = EventLog(rd / "events.jsonl", stream)
    watchers = [] if nested else _watchers(progress)
    events.listeners.extend(watchers)
    return OpenRun(config, rd, run_id, resume, state, events, environ, watchers)


_said: set[str] = set()


def _confined(config: RunConfig, run_dir: Path) -> RunConfig:
    """The configuration with the step's sandbox policy, now that the run directory is
    known. Said on stderr when the sandbox is off (once a process) or cannot be made."""
    import dataclasses

    from .confine import with_run_dir

    if config.confinement.state == "off":
        from ..tools.sandbox import warn_unconfined_once

        warn_unconfined_once()
    elif config.confinement.state == "unavailable" and config.confinement.reason not in _said:
        _said.add(config.confinement.reason)  # once a process: a pipeline runs several steps
        logs.warn(
            f"the shell sandbox is not available here: {config.confinement.reason}; every "
            "shell call will be refused and the audit's build and test will not run",
            fix=config.confinement.fix,
        )
    confinement = with_run_dir(config.confinement, config.workspace, run_dir.resolve())
    return dataclasses.replace(config, confinement=confinement)


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

    opened = open_run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume_dir,
        stream=stream,
        environ=environ,
    )
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
) -> dict[str, Any]:
    """`run` inside a running event loop, so that many runs can share one (`orkeon jobs
    run`, docs/scale.md). The preparation runs in the loop's thread and blocks it briefly."""
    opened = open_run(
        step,
        doc,
        workspace=workspace,
        run_dir=run_dir,
        resume_dir=resume_dir,
        stream=stream,
        environ=environ,
    )
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
    )
    events.emit(
        "run.start",
        run_id=sr.run_id,
        step=step,
        workspace=str(config.workspace),
        run_dir=str(sr.run_dir),
        resume=sr.resume,
        budget=ledger.limits.model_dump(),
    )
    log = logs.get()
    log.info("step started", step=step, run_id=sr.run_id, run_dir=str(sr.run_dir))
    try:
        try:
            outcome = await _outcome(sr, watch_signals, stop, opened.environ)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await _finish(sr, _partial(sr, "interrupted", "interrupted"))
            raise
        return await _finish(sr, outcome)
    finally:
        events.close()
        for watcher in opened.watchers:
            watcher.close()


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
        log.error("step crashed", exc_info=cause)
        outcome = _partial(sr, "error", f"{type(cause).__name__}: {cause}")
    finally:
        # The provider's HTTP client is closed inside the loop that opened it.
        with anyio.move_on_after(5, shield=True):
            await sr.provider.aclose()
    if outcome is None or interrupted:
        return _partial(sr, "interrupted", "interrupted by a signal")
    return outcome


async def _finish(sr: StepRun, outcome: StepOutcome) -> dict[str, Any]:
    result = result_document(
        sr.run_id, sr.step, outcome, sr.ledger, sandbox=sr.config.confinement.state
    )
    atomic_write_json(sr.run_dir / "result.json", result)
    sr.events.emit("result", **result)
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
