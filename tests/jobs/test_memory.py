"""Many runs in one process (`orkeon jobs run`): nothing process-wide changes from one
job to the next (environment, current directory, loggers, threads, open files, modules),
and what a finished job leaves behind in memory is next to nothing."""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import threading
import tracemalloc
from pathlib import Path

import anyio
import pytest
from kit.steps import scripted, write

from orkeon_run.jobs import execute
from orkeon_run.jobs.joblist import read

WARM, MEASURED = 10, 40
# Bytes a finished job may leave behind, on average (measured: about 200, bounded caches
# of the re and codecs modules filling up). Keeping only each job's result document
# measured 1,700: anything a run holds (its provider, ledger, agents) is far above.
PER_JOB_BOUND = 1500


def tiny_list(folder: Path, count: int) -> Path:
    doc = {
        "request": "r",
        **scripted({"writer": [{"tool_calls": [write(".orkeon/spec.md", "s")]}]}),
    }
    lines = []
    for n in range(count):
        (folder / "ws" / str(n)).mkdir(parents=True)
        lines.append(
            json.dumps({"id": f"j{n}", "step": "dev-spec", "workspace": f"ws/{n}", "inputs": doc})
        )
    path = folder / "jobs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def process_state() -> dict[str, object]:
    return {
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
        "loggers": sorted(logging.root.manager.loggerDict),
        "root handlers": list(logging.root.handlers),
        "threads": threading.active_count(),
        "open files": len(os.listdir("/proc/self/fd")),
        "modules": len(sys.modules),
    }


@pytest.mark.slow
def test_a_process_running_many_jobs_keeps_no_trace_of_the_finished_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("ORKEON_LOG_LEVEL", "warning")
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    jobs = read(str(tiny_list(tmp_path, WARM + MEASURED))).jobs
    out = tmp_path / "out"
    out.mkdir()
    stop = anyio.Event()
    samples: dict[str, object] = {}

    async def main() -> None:
        for n, job in enumerate(jobs):
            if n == WARM:  # imports, caches and first-use costs are behind us
                gc.collect()
                samples["state"] = process_state()
                samples["before"] = tracemalloc.get_traced_memory()[0]
            await execute._run_job(job, out, "1/1", stop)
        gc.collect()
        samples["after"] = tracemalloc.get_traced_memory()[0]
        samples["state after"] = process_state()

    tracemalloc.start()
    try:
        anyio.run(main)
    finally:
        tracemalloc.stop()
    results = [json.loads((out / j.id / "result.json").read_text())["status"] for j in jobs]
    assert results == ["succeeded"] * len(jobs)
    assert samples["state after"] == samples["state"]
    per_job = (samples["after"] - samples["before"]) / MEASURED  # type: ignore[operator]
    assert per_job < PER_JOB_BOUND, f"{per_job:.0f} bytes left behind per job"
