"""`orkeon run`: inputs → run directory → the step's runner → result document.

The one place that turns a step's outcome (or an exception) into the result document
and the exit code. SIGINT and SIGTERM cancel the step: no new call starts, what finished
is kept, the result says "interrupted", exit 130.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from . import logs
from .budget import Ledger
from .errors import STATUS_EXIT, InputError, UsageError
from .events import EventLog
from .prepare import Prepared, prepare, stdin_tty
from .rundir import atomic_write_json, new_run_id, read_json, redact
from .steprun import StepOutcome, StepRun

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
    progress: str = "none",
) -> dict[str, Any]:
    """Run one step; return the result document. Input problems raise InputError (exit 2)
    before anything is written. `progress` (live, plain, none) is shown on stderr; traces
    are exported when the OTEL_* variables ask for them (run/telemetry.py)."""
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
    watchers = _watchers(progress)
    events.listeners.extend(watchers)
    try:
        return _run_step(step, runner, prep, rd, run_id, events, resume, state, environ)
    finally:
        events.close()
        for watcher in watchers:
            watcher.close()


def _watchers(progress: str) -> list[Any]:
    """The run's event listeners: its progress view and its trace exporter, each with a
    `close()` (the final summary; the traces flushed, bounded in time)."""
    from .run import progress as progress_view
    from .run import telemetry

    watchers = progress_view.listeners(progress)
    traces = telemetry.from_environ()
    return [*watchers, traces] if traces is not None else watchers


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
        budget=ledger.limits.model_dump(),
    )
    log = logs.get()
    log.info("step started", step=step, run_id=run_id, run_dir=str(rd))

    async def main() -> StepOutcome:
        outcome: StepOutcome | None = None
        interrupted = False
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:
                        interrupted = True
                        log.warning("interrupted; stopping the roles", signal=signum)
                        tg.cancel_scope.cancel()
                        return

            async def body() -> None:
                nonlocal outcome
                outcome = await runner(sr)
                tg.cancel_scope.cancel()

            tg.start_soon(watch_signals)
            tg.start_soon(body)
        # The provider's HTTP client is closed inside the loop that opened it.
        with anyio.move_on_after(5, shield=True):
            await sr.provider.aclose()
        if interrupted or outcome is None:
            roles = [a.result for a in sr.agents.values() if a.turns or a.calls]
            return StepOutcome(status="interrupted", roles=roles, error="interrupted by a signal")
        return outcome

    try:
        outcome = anyio.run(main)
    except Exception as exc:  # a bug, or a failure no step handled: still leave a result
        cause = _first_cause(exc)
        log.error("step crashed", exc_info=cause)
        roles = [a.result for a in sr.agents.values() if a.turns or a.calls]
        outcome = StepOutcome(status="error", roles=roles, error=f"{type(cause).__name__}: {cause}")
    result = result_document(run_id, step, outcome, ledger)
    atomic_write_json(rd / "result.json", result)
    events.emit("result", **result)
    log.info("step ended", step=step, status=result["status"], exit_code=result["exit_code"])
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
