"""Opening a run (`orkeon run`, docs/output.md): its inputs checked into its configuration
(prepare.py) before anything is written, then its run directory made, or the resumed run's
taken again, with its records, its event log and what watches the events (the progress
view, the traces). `execute` (runner.py) then runs the step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import logs
from ..environ import Redactor
from ..errors import RecordsError
from ..events import EventLog
from . import progress as progress_view
from . import telemetry
from .context import with_saved_pins
from .prepare import RunConfig, prepare, stdin_tty
from .records import RunLock, RunRecords, check_seals_dir, pin
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
from .secrets import run_redactor
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
    # A resumed run's earlier attempts' spending (the last result's `budget`), which its
    # ledger starts from: the budget spans attempts. None for a new run, and for a
    # pipeline's step (the pipeline's own ledger counts the earlier attempts).
    earlier: dict[str, Any] | None = None


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
    bare: bool = False,
) -> OpenRun:
    """Prepare the run and open its directory. Input problems raise InputError (exit 2)
    before anything is written; so does a run directory another run holds, or a resumed
    one whose records are not the ones its run wrote (records.py). A run directory the
    disk refuses is no exception: the OpenRun carries the `failure`. `progress` (live,
    plain, none) is shown on stderr; traces are exported when the OTEL_* variables ask for
    them (run/telemetry.py). `flags` are the command line's knobs (prepare.py). `nested`:
    a step of a pipeline, whose knobs, warnings, progress and traces are the pipeline's
    (steps/chain.py). `bare`: read no configuration the inputs do not name (`--bare`;
    also ORKEON_BARE, and a resumed run that was bare: its state.json says so)."""
    step_module(step)  # an unknown step is a usage error before anything is read
    resumed = None
    if resume_dir is not None:
        resumed = resumed_run(resolve(resume_dir), step, doc, environ)
        doc = resumed.doc
        bare = bare or resumed.state.get("bare") is True
    try:
        config, redactor = _prepared(step, doc, resumed, workspace, environ, flags, nested, bare)
        rd, run_id, state = _where(step, config, resumed, run_dir)
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
        with_saved_pins(config, state),  # a resumed run's (a repair's: the failed run's)
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
        earlier=resumed.earlier if resumed is not None and not nested else None,
    )


def _prepared(
    step: str,
    doc: Any,
    resumed: Resumed | None,
    workspace: str | None,
    environ: Mapping[str, str] | None,
    flags: Mapping[str, str | None] | None,
    nested: bool,
    bare: bool,
) -> tuple[RunConfig, Redactor]:
    """The run's checked configuration (its warnings said, unless the pipeline said them)
    and what its records redact; the seals' folder checked before anything is written."""
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
        bare=bare,
    )
    if not nested:
        for line in config.warnings:
            logs.warn(line)
    check_seals_dir(config.workspace, environ)
    redactor = run_redactor(config, environ)
    logs.redact(redactor.secrets)
    return config, redactor


def _where(
    step: str, config: RunConfig, resumed: Resumed | None, run_dir: str | None
) -> tuple[Path, str, dict[str, Any]]:
    """The run's directory, its id and its state: a new run's, or the resumed run's own."""
    if resumed is not None:
        rd, saved = resumed.records.run_dir, resumed.state
        return rd, saved.get("run_id") or rd.name, saved
    run_id = new_run_id()
    rd = resolve(run_dir) if run_dir else default_run_dir(config.workspace, run_id)
    state: dict[str, Any] = {"run_id": run_id, "step": step, "pins": config.pins.saved}
    state["instructions"] = config.instructions.saved  # the texts the roles were given
    if config.bare:  # a --resume stays bare
        state["bare"] = True
    if config.plan is not None:  # the plan as it is now: --resume and repairs run it
        state["plan"] = pin(config.plan, config.plan_rel)
    return rd, run_id, state


def _watchers(progress: str) -> list[Any]:
    watchers = progress_view.listeners(progress)
    traces = telemetry.from_environ()
    return [*watchers, traces] if traces is not None else watchers
