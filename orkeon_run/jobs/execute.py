"""`orkeon jobs run`: one shard's jobs, K at a time, in one process and one event loop.

Each job runs as `orkeon run` would (`run.runner.run`), in its own run directory
`OUT/ID/` with its own budget, events and result. A finished job (jobdir.py) is skipped;
any other is run again, resumed where its run directory holds an earlier attempt. One
job's failure, crash or bad inputs never stops the others.

SIGINT and SIGTERM stop the shard: no job starts after them, the running ones stop as
`orkeon run` stops on a signal (their results say "interrupted"), and the exit is 130.

Exit code over every job of the shard, those skipped included (so a re-run that skips a
failed job still says it failed), first match wins:

    130  interrupted by a signal
    4    a job could not reach its model provider: run the shard again later, which
         redoes only those jobs (and any other that did not finish)
    1    a job failed, crashed, could not start, or did not finish
    3    a job ran out of budget, or was skipped because the batch's cap was spent
         (jobs/cap.py), and nothing worse happened
    0    every job succeeded (also: a shard with no jobs)
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from .. import logs
from ..errors import InputError, OrkeonError, one_line
from ..run import runner
from ..run.records import SEALS_VAR
from ..units import count, duration, money
from . import clone, collect, jobdir
from .cap import BatchCap
from .joblist import GitSource, Job

T = TypeVar("T")


def exit_code(outcomes: list[str], interrupted: bool) -> int:
    """The shard's exit code (module docstring)."""
    if interrupted:
        return 130
    if "provider_failed" in outcomes:
        return 4
    if any(o not in ("succeeded", "budget_exhausted", "skipped") for o in outcomes):
        return 1
    return 3 if "budget_exhausted" in outcomes or "skipped" in outcomes else 0


async def run_shard(
    jobs: list[Job],
    out: Path,
    shard: str,
    concurrency: int,
    cap: BatchCap | None = None,
    bare: bool = False,
) -> tuple[int, dict[str, Any]]:
    """Run `jobs` (one shard's, already checked) into `out`; (exit code, summary). With
    `cap` (the batch's, jobs/cap.py) each job starts on its share of what is left, or is
    skipped once a capped total is spent; the summary's `cap` says spent against cap.
    `bare`: each job is a bare run (config/sources.py)."""
    out.mkdir(parents=True, exist_ok=True)
    stop = anyio.Event()
    interrupted = False
    skipped = 0
    pending: list[Job] = []
    for job in jobs:
        status = jobdir.job_outcome(out / job.id)
        if status in jobdir.FINISHED:
            skipped += 1
            _say(f"job {job.id}: {status} earlier, skipped")
        else:
            pending.append(job)
    queue = iter(pending)

    async def worker() -> None:
        for job in queue:  # one iterator shared by the workers: each job is taken once
            if stop.is_set():
                return
            share = cap.take(job.id) if cap else None
            if cap and share is None:
                jobdir.skipped(out / job.id, job.definition, shard, job.fingerprint)
                _say(f"job {job.id}: skipped: the batch's cap is spent")
                continue
            result = None
            try:
                result = await _run_job(job, out, shard, stop, share, bare)
            except Exception as exc:  # its folder cannot be written (a full disk): go on
                logs.get().error("job crashed", job=job.id, exc_info=exc)
                _say(f"job {job.id}: not run: {type(exc).__name__}: {exc}")
            finally:
                if cap:
                    cap.give_back(job.id, result)

    async def watch_signals() -> None:
        # Listening until the workers are done: a second signal (CI engines send SIGTERM
        # after SIGINT) must not turn into a KeyboardInterrupt that cuts the runs' own
        # stopping short.
        nonlocal interrupted
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                if not interrupted:
                    logs.get().warning("interrupted; stopping the running jobs", signal=signum)
                interrupted = True
                stop.set()

    async with anyio.create_task_group() as outer:
        outer.start_soon(watch_signals)
        async with anyio.create_task_group() as workers:
            for _ in range(min(concurrency, len(pending))):
                workers.start_soon(worker)
        outer.cancel_scope.cancel()

    rows = [collect.read_job(out / job.id, job.id) for job in jobs]
    code = exit_code([r["status"] for r in rows], interrupted)
    summary = {
        "shard": shard,
        "out": str(out),
        "exit_code": code,
        "interrupted": interrupted,
        "skipped": skipped,
        **collect.report(rows),
    }
    if cap:
        summary["cap"] = cap.summary()
        cap.write(out, shard)
    counts = ", ".join(f"{n} {k}" for k, n in summary["jobs"].items() if n and k != "total")
    _say(
        f"jobs: shard {shard}: {count(len(rows), 'job')}{', ' if counts else ''}{counts} (exit {code})"
    )
    return code, summary


async def _run_job(
    job: Job,
    out: Path,
    shard: str,
    stop: anyio.Event,
    share: dict[str, float] | None = None,
    bare: bool = False,
) -> dict[str, Any] | None:
    """Run one job; its result document (None: it did not start)."""
    jd = out / job.id
    jobdir.begin(jd, job.definition, shard, job.fingerprint)
    try:
        source = job.workspace
        if isinstance(source, GitSource):
            ws = await _unless_stopped(lambda: clone.workspace(source, jd), stop)
            if ws is None:
                _say(f"job {job.id}: interrupted before its workspace was cloned")
                return None
        else:
            ws = source
        resume = (jd / "inputs.json").is_file()
        result = await runner.run(
            job.step,
            job.inputs,
            workspace=str(ws),
            run_dir=None if resume else str(jd),
            resume_dir=str(jd) if resume else None,
            stream=None,
            environ=_with_seals(out),
            watch_signals=False,
            stop=stop,
            share=share,
            hidden=[out],  # every sibling job's folder and the seals (docs/scale.md)
            bare=bare,
        )
    except clone.CloneFailed as exc:
        _not_started(jd, job, f"workspace: {exc}")
        return None
    except InputError as exc:
        _not_started(jd, job, "; ".join(exc.problems))
        return None
    except OrkeonError as exc:
        _not_started(jd, job, str(exc))
        return None
    except Exception as exc:  # a bug: this job is lost, the others go on
        logs.get().error("job crashed", job=job.id, exc_info=exc)
        _not_started(jd, job, f"internal error: {type(exc).__name__}: {exc}")
        return None
    row = collect.read_job(jd, job.id)
    why = f": {row['error']}" if row["error"] and row["status"] != "succeeded" else ""
    _say(
        f"job {job.id}: {row['status']} ({count(row['calls'], 'call')}, {row['refused']:,} "
        f"refused, {duration(row['seconds'])}, {money(row['usd'])}) {jd}{why}"
    )
    return result


def _with_seals(out: Path) -> dict[str, str]:
    """orkeon's environment, the runs' seals kept in OUT/_seals (unless ORKEON_SEALS_DIR
    says where): with the job folders, so a shard run again elsewhere (another pod on the
    same volume, a CI job that restored OUT) can resume them (docs/security.md). No job id
    starts with `_`, and the folder is not hidden (upload-artifact skips hidden ones)."""
    env = dict(os.environ)
    env.setdefault(SEALS_VAR, str(out.resolve() / "_seals"))
    return env


def _not_started(jd: Path, job: Job, error: str) -> None:
    jobdir.could_not_start(jd, error)
    _say(f"job {job.id}: not started: {error}")


async def _unless_stopped(fn: Callable[[], Awaitable[T]], stop: anyio.Event) -> T | None:
    """`fn()`'s value, or None when `stop` is set first (fn is then cancelled). What fn
    raises is raised as it is, not wrapped in an ExceptionGroup."""
    value: T | None = None
    error: Exception | None = None
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        async def work() -> None:
            nonlocal value, error
            try:
                value = await fn()
            except Exception as exc:
                error = exc
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(work)
    if error is not None:
        raise error
    return value


def _say(line: str) -> None:
    """A line for the person or the CI log watching the shard (stderr; never a log line,
    so ORKEON_LOG_LEVEL=warning keeps these and silences each run's own)."""
    sys.stderr.write(one_line(line) + "\n")
    sys.stderr.flush()
