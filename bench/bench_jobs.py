"""`orkeon jobs run` against separate processes (issue 16): N tiny scripted jobs (the
mix of tests/kit/jobs.py: dev-spec and dev-batches, one or two turns, each in its own copy
of a tiny git repository) run by `orkeon jobs run --concurrency 2` in one process, and
the same jobs as N separate `orkeon run` processes, two at a time, in the same run.
Targets: faster, and the jobs process's peak memory under 300 MB (and flat: the N-job
run's peak next to a SMALL-job run's).

Peak memory is `ru_maxrss` of `os.wait4`, taken by the small intermediate process of
bench_scale.py (its docstring says why). Both sides run the same jobs, in their own
workspaces, with the same environment; their outcomes are checked equal, so neither side
can win by doing less.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.kit import jobs as jobkit

from .bench_scale import PEAK
from .common import PY, header, row

N, SMALL = 500, 100
CONCURRENCY = 2
MB_TARGET = 300.0
FLAT = 1.15  # the N-job run's peak at most 15 % over the SMALL-job run's


def jobs_run(jobs: Path, out: Path, env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """(seconds, peak RSS in MB, summary) of `orkeon jobs run` over the whole list."""
    argv = [*jobkit.ORKEON, "jobs", "run", str(jobs), "--concurrency", str(CONCURRENCY)]
    start = time.perf_counter()
    done = subprocess.run(
        [PY, "-S", "-c", PEAK, *argv, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    summary = json.loads(done.stdout)
    if summary["exit_code"] != done.returncode or summary["jobs"]["total"] != _count(jobs):
        raise RuntimeError(f"orkeon jobs run went wrong: {done.stderr[-2000:]}")
    return seconds, int(done.stderr.rsplit("peak_kib ", 1)[1]) / 1024, summary


def processes(jobs: Path, out: Path, env: dict[str, str]) -> tuple[float, dict[str, str]]:
    """(seconds, status by id) of one `orkeon run` process per job, CONCURRENCY at a time."""
    argvs = []
    for line in jobs.read_text().splitlines():
        job = json.loads(line)
        doc = out / f"{job['id']}.inputs.json"
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_text(json.dumps(job["inputs"]))
        argvs.append([
            *jobkit.ORKEON, "run", job["step"], "--inputs", f"@{doc}", "--output", "json",
            "--workspace", str(jobs.parent / job["workspace"]), "--run-dir", str(out / job["id"]),
        ])  # fmt: skip

    def one(argv: list[str]) -> None:
        subprocess.run(argv, env=env, capture_output=True, check=False)

    start = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(one, argvs))
    seconds = time.perf_counter() - start
    status = {}
    for argv in argvs:
        rd = Path(argv[-1])
        status[rd.name] = json.loads((rd / "result.json").read_text())["status"]
    return seconds, status


def _count(jobs: Path) -> int:
    return len(jobs.read_text().splitlines())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        repo = jobkit.template(root)
        env = jobkit.environ(root)
        one = jobkit.make_list(root / "one", N, repo=repo)
        many = jobkit.make_list(root / "many", N, repo=repo)
        small = jobkit.make_list(root / "small", SMALL, repo=repo)
        t_small, mb_small, _ = jobs_run(small, root / "small" / "out", env)
        t_jobs, mb_jobs, summary = jobs_run(one, root / "one" / "out", env)
        t_procs, status = processes(many, root / "many" / "out", env)
    ran = {r["id"]: r["status"] for r in summary["rows"]}
    if ran != status:
        raise RuntimeError("the two ways of running the same jobs ended differently")
    header()
    row(f"{N} jobs, jobs run --concurrency {CONCURRENCY}", f"{t_jobs:.1f} s",
        f"{t_procs:.1f} s", t_jobs / t_procs, "< 1× (faster)", t_jobs < t_procs)  # fmt: skip
    row(f"time a job, jobs run ({SMALL} jobs)", f"{t_small / SMALL * 1000:.0f} ms",
        f"{t_procs / N * 1000:.0f} ms", t_small / SMALL / (t_procs / N), "", None)  # fmt: skip
    row(f"peak RSS, jobs run, {N} jobs", f"{mb_jobs:.1f} MB", f"{mb_small:.1f} MB",
        mb_jobs / mb_small, f"< {MB_TARGET:g} MB, ≤ {FLAT:g}×",
        mb_jobs < MB_TARGET and mb_jobs <= FLAT * mb_small)  # fmt: skip
    counts = ", ".join(f"{n} {k}" for k, n in summary["jobs"].items() if n and k != "total")
    print(f"(the same {N} jobs both ways: {counts}; baselines: {N} `orkeon run` processes "
          f"{CONCURRENCY} at a time (time a job: theirs, wall time over jobs), and a "
          f"{SMALL}-job `orkeon jobs run` for memory)")  # fmt: skip


if __name__ == "__main__":
    main()
