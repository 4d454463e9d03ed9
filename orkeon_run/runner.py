"""`orkeon run`: inputs → run directory → the step's runner → result document.

The one place that turns a step's outcome (or an exception) into the result document
and the exit code. SIGINT and SIGTERM cancel the step: no new call starts, what finished
is kept, the result says "interrupted", exit 130.

`run` runs the step in an event loop of its own; `run_async` is the same inside a running
loop, where many runs share one (`orkeon jobs run`, docs/scale.md).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import logs
from .budget import Ledger
from .errors import STATUS_EXIT, InputError, UsageError
from .events import EventLog
from .prepare import Prepared, prepare, stdin_tty
from .rundir import atomic_write_json, new_run_id, read_json, redact
from .steprun import StepOutcome, StepRun

if TYPE_CHECKING:
    import anyio

STEP_MODULES = {
    "dev-spec": "spec",
    "dev-plan": "plan",
    "dev-batches": "batches",
    "tasks-repair": "repair",
}


def step_runner(step: str) -> Any:
    if step not in STEP_MODULES:
        raise UsageError(f"STEP: unknown step {step!r} (one of: {', '.join(STEP_MODULES)})")
    try:
        module = importlib.import_module(f".steps.{STEP_MODULES[step]}", __package__)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(f"{__package__}.steps"):
            raise UsageError(f"STEP: the {step} runner is not built yet") from None
        raise
    return module.run


def resume_document(run_dir: Path, overrides: Any | None) -> dict[str, Any]:
    """The saved inputs of RUN_DIR, with top-level keys of `overrides` replacing theirs."""
    saved = run_dir / "inputs.json"
    if not saved.is_file():
        raise InputError(f"--resume: not a run directory (no inputs.json): {run_dir}")
    doc = read_json(saved)
    if overrides is not None:
        if not isinstance(overrides, dict):
            raise InputError("inputs: must be a JSON object")
        doc.update(overrides)
    return doc


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
    """Run one step; return the result document. Input problems raise InputError (exit 2)
    before anything is written."""
    step, runner, prep, rd, run_id, events, resume, state = _start(
        step, doc, workspace, run_dir, resume_dir, stream, environ
    )
    try:
        return _run_step(step, runner, prep, rd, run_id, events, resume, state, environ)
    finally:
        events.close()


async def run_async(
    step: str,
    doc: Any,
    *,
    workspace: str | None,
    run_dir: str | None,
    resume_dir: str | None,
    stream: IO[str] | None,
    environ: Mapping[str, str] | None = None,
    watch_signals: bool = True,
    stop: anyio.Event | None = None,
) -> dict[str, Any]:
    """`run` inside a running event loop, so that many runs can share one (`orkeon jobs
    run`). With `watch_signals=False` the run does not listen for SIGINT/SIGTERM itself;
    `stop` (an `anyio.Event`) then ends it as a signal would: no new call starts, what
    finished is kept, the result says "interrupted". The preparation (inputs, run
    directory) runs in the loop's thread and blocks it briefly."""
    step, runner, prep, rd, run_id, events, resume, state = _start(
        step, doc, workspace, run_dir, resume_dir, stream, environ
    )
    try:
        return await _run_step_async(
            step, runner, prep, rd, run_id, events, resume, state, environ, watch_signals, stop
        )
    finally:
        events.close()


def _start(
    step: str,
    doc: Any,
    workspace: str | None,
    run_dir: str | None,
    resume_dir: str | None,
    stream: IO[str] | None,
    environ: Mapping[str, str] | None,
) -> tuple[str, Any, Prepared, Path, str, EventLog, bool, dict[str, Any]]:
    """Everything before the step's loop: inputs prepared, the run directory made, its
    inputs and state saved, the event log open (the caller closes it)."""
    runner = step_runner(step)
    resume = resume_dir is not None
    state: dict[str, Any] = {}
    if resume_dir is not None:
        # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
        # internal error, exit 1); the shell's way is to keep the text as it is.
        rd = Path(os.path.expanduser(resume_dir)).resolve()
        doc = resume_document(rd, doc)
        state = _read_state(rd)
        if state.get("step", step) != step:
            raise UsageError(f"--resume: {rd} is a {state['step']} run, not {step}")
    if step == "tasks-repair" and isinstance(doc, dict):
        from .steps.repair import repair_document

        doc = repair_document(doc)
    prep = prepare(doc, step=step, workspace=workspace, environ=environ, stdin_is_tty=stdin_tty())
    # The saved inputs name the workspace the run used, so --resume and tasks-repair act on
    # the same tree whatever folder they are started from.
    prep.doc = {**prep.doc, "workspace": str(prep.workspace)}
    for line in prep.warnings:
        logs.warn(line)
    if not resume:
        run_id = new_run_id()
        rd = (
            Path(os.path.expanduser(run_dir)).resolve()
            if run_dir
            else prep.workspace / ".orkeon" / "runs" / run_id
        )
        if (rd / "inputs.json").exists():
            raise UsageError(f"--run-dir: already holds a run (use --resume to continue it): {rd}")
        state = {"run_id": run_id, "step": step}
    else:
        run_id = state.get("run_id") or rd.name
    rd.mkdir(parents=True, exist_ok=True)
    _save_inputs(rd, prep.doc, resume)
    atomic_write_json(rd / "state.json", state)
    events = EventLog(rd / "events.jsonl", stream)
    return step, runner, prep, rd, run_id, events, resume, state


def _read_state(rd: Path) -> dict[str, Any]:
    path = rd / "state.json"
    if not path.is_file():
        return {}
    try:
        state = read_json(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume: cannot read {path}: {exc}") from None
    return state if isinstance(state, dict) else {}


def _save_inputs(rd: Path, doc: dict[str, Any], resume: bool) -> None:
    target = rd / "inputs.json"
    if resume and target.exists():
        if read_json(target) == redact(doc):
            return
        # Nothing a user wrote is lost: the inputs of the earlier attempt stay beside.
        n = 1
        while (rd / f"inputs.{n}.json").exists():
            n += 1
        target.rename(rd / f"inputs.{n}.json")
    atomic_write_json(target, redact(doc))


def _run_step(
    step: str,
    runner: Any,
    prep: Prepared,
    rd: Path,
    run_id: str,
    events: EventLog,
    resume: bool,
    state: dict[str, Any],
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    import anyio

    sr = _step_run(step, prep, rd, run_id, events, resume, state, environ)
    try:
        outcome = anyio.run(_main, runner, sr, True, None)
    except Exception as exc:  # a bug, or a failure no step handled: still leave a result
        outcome = _crashed(sr, exc)
    return _finish(sr, outcome)


async def _run_step_async(
    step: str,
    runner: Any,
    prep: Prepared,
    rd: Path,
    run_id: str,
    events: EventLog,
    resume: bool,
    state: dict[str, Any],
    environ: Mapping[str, str] | None,
    watch_signals: bool,
    stop: anyio.Event | None,
) -> dict[str, Any]:
    import anyio

    sr = _step_run(step, prep, rd, run_id, events, resume, state, environ)
    try:
        outcome = await _main(runner, sr, watch_signals, stop)
    except anyio.get_cancelled_exc_class():
        # Cancelled from outside (not through `stop`): the result still says so.
        with anyio.move_on_after(5, shield=True):
            await sr.provider.aclose()
        _finish(sr, _interrupted(sr))
        raise
    except Exception as exc:  # a bug, or a failure no step handled: still leave a result
        outcome = _crashed(sr, exc)
    return _finish(sr, outcome)


def _step_run(
    step: str,
    prep: Prepared,
    rd: Path,
    run_id: str,
    events: EventLog,
    resume: bool,
    state: dict[str, Any],
    environ: Mapping[str, str] | None,
) -> StepRun:
    from .crew import load_crew
    from .gate import Gate
    from .models import build_provider

    crew = load_crew(step, prep.workspace)
    # The crew's budget is the default; a budget in --inputs replaces it whole.
    given = "budget" in prep.inputs.model_fields_set
    ledger = Ledger(prep.inputs.budget if given else crew.budget)
    settings_hooks = None
    if prep.settings_config:
        from .hooks.settings import SettingsHooks

        settings_hooks = SettingsHooks(
            prep.settings_config,
            workspace=prep.workspace,
            events=events,
            extra_env_remove=_key_envs(prep),
        )
    sr = StepRun(
        step=step,
        inputs=prep.inputs,
        workspace=prep.workspace,
        run_dir=rd,
        run_id=run_id,
        ledger=ledger,
        events=events,
        provider=build_provider(prep.inputs.model, environ=environ),
        gate=Gate.from_inputs(prep.inputs.gate),
        shell_rules=prep.shell_rules,
        settings_hooks=settings_hooks,
        resume=resume,
        state=state,
    )
    events.emit(
        "run.start",
        run_id=run_id,
        step=step,
        workspace=str(prep.workspace),
        run_dir=str(rd),
        resume=resume,
    )
    logs.get().info("step started", step=step, run_id=run_id, run_dir=str(rd))
    return sr


async def _main(
    runner: Any, sr: StepRun, watch_signals: bool, stop: anyio.Event | None
) -> StepOutcome:
    """The step, until it ends, a signal comes (`watch_signals`) or `stop` is set."""
    import anyio

    log = logs.get()
    outcome: StepOutcome | None = None
    interrupted = False
    async with anyio.create_task_group() as tg:

        async def signals() -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                async for signum in received:
                    interrupted = True
                    log.warning("interrupted; stopping the roles", signal=signum)
                    tg.cancel_scope.cancel()
                    return

        async def stopped(stop: anyio.Event) -> None:
            nonlocal interrupted
            await stop.wait()
            interrupted = True
            tg.cancel_scope.cancel()

        async def body() -> None:
            nonlocal outcome
            outcome = await runner(sr)
            tg.cancel_scope.cancel()

        if watch_signals:
            tg.start_soon(signals)
        if stop is not None:
            tg.start_soon(stopped, stop)
        tg.start_soon(body)
    # The provider's HTTP client is closed inside the loop that opened it.
    with anyio.move_on_after(5, shield=True):
        await sr.provider.aclose()
    if interrupted or outcome is None:
        return _interrupted(sr)
    return outcome


def _interrupted(sr: StepRun) -> StepOutcome:
    roles = [a.result for a in sr.agents.values() if a.turns or a.calls]
    return StepOutcome(status="interrupted", roles=roles, error="interrupted by a signal")


def _crashed(sr: StepRun, exc: Exception) -> StepOutcome:
    cause = _first_cause(exc)
    logs.get().error("step crashed", exc_info=cause)
    roles = [a.result for a in sr.agents.values() if a.turns or a.calls]
    return StepOutcome(status="error", roles=roles, error=f"{type(cause).__name__}: {cause}")


def _finish(sr: StepRun, outcome: StepOutcome) -> dict[str, Any]:
    result = result_document(sr.run_id, sr.step, outcome, sr.ledger)
    atomic_write_json(sr.run_dir / "result.json", result)
    sr.events.emit("result", **result)
    logs.get().info(
        "step ended", step=sr.step, status=result["status"], exit_code=result["exit_code"]
    )
    return result


def _first_cause(exc: BaseException) -> BaseException:
    """The exception a task group wrapped (`ExceptionGroup: unhandled errors in a
    TaskGroup` names nothing a person can act on)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _key_envs(prep: Prepared) -> list[str]:
    key = getattr(prep.inputs.model, "api_key_env", None)
    return [key] if key else []


def result_document(run_id: str, step: str, outcome: StepOutcome, ledger: Ledger) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "step": step,
        "status": outcome.status,
        "exit_code": STATUS_EXIT[outcome.status],
        "budget": ledger.snapshot(),
        "roles": [r.to_json() for r in outcome.roles],
        "artifacts": dict(outcome.artifacts),
        "audits": list(outcome.audits),
        "error": outcome.error,
    }


def stdout_stream() -> IO[str]:
    return sys.stdout
