"""The four `orkeon jobs` commands once their arguments are parsed: each returns its exit
code, prints its data on stdout and its lines for people on stderr. Bad input raises
InputError (exit 2, one line per problem, nothing run), as every orkeon command does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from ..errors import InputError
from ..escape import write_line
from ..jobs import collect, execute, jobdir, joblist, render
from ..jobs import matrix as engines
from ..jobs.shards import check_count, parse_shard, shard_of

FORMATS = ("json", "md", "html", "junit")
MAX_CONCURRENCY = 256


def _warn(line: str) -> None:
    write_line(sys.stderr, f"warning: {line}")


def _folder(text: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    return Path(os.path.expanduser(text)).resolve()


def validate(src: str) -> int:
    """Check the whole list: its shape, and every job's inputs."""
    jobs = joblist.read(src)
    joblist.check_inputs(jobs.jobs, jobs.name, warn=_warn)
    sys.stdout.write(f"{len(jobs.jobs)} jobs are valid\n")
    return 0


def run(src: str, *, shard: str, concurrency: int, out: str) -> int:
    """Run shard I/N of the list into OUT (execute.py); print the summary as JSON."""
    index, total = parse_shard(shard)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise InputError(f"--concurrency: {concurrency} is not between 1 and {MAX_CONCURRENCY}")
    jobs = joblist.read(src)
    mine = [job for job in jobs.jobs if shard_of(job.id, total) == index]
    joblist.check_inputs(mine, jobs.name, warn=_warn)
    folder = _folder(out)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out: not a folder: {out}")
    conflicts = [jobdir.conflict(folder / job.id, job.id, job.fingerprint) for job in mine]
    problems = [f"--out: {c}" for c in conflicts if c]
    if problems:
        raise InputError(problems)
    code, summary = anyio.run(execute.run_shard, mine, folder, f"{index}/{total}", concurrency)
    # ASCII escapes: an error line may hold a lone surrogate (a JSON "\\ud800" a model
    # sent), which no UTF-8 stdout can take as it is.
    sys.stdout.write(json.dumps(summary) + "\n")
    return code


def matrix(
    src: str,
    *,
    shards: int,
    engine: str,
    image: str = "orkeon:latest",
    concurrency: int = 4,
    parallelism: int | None = None,
) -> int:
    """Print what `engine` needs to run the list in `shards` shards (matrix.py)."""
    check_count(shards)
    if engine not in engines.ENGINES:
        raise InputError(f"--for: {engine!r} is not one of {', '.join(engines.ENGINES)}")
    if parallelism is not None and parallelism < 1:
        raise InputError(f"--parallelism: {parallelism} is not 1 or more")
    jobs = joblist.read(src)
    if engine == "github":
        text = engines.github(jobs, shards)
    elif engine == "gitlab":
        text = engines.gitlab(jobs, shards)
    else:
        text = engines.kubernetes(
            jobs, shards, image=image, concurrency=concurrency, parallelism=parallelism
        )
    sys.stdout.write(text)
    return 0


def merge(dirs: list[str], *, fmt: str = "json", output: str | None = None) -> int:
    """One report over every job found under `dirs` (collect.py), in `fmt`, on stdout or
    into `output`."""
    if fmt not in FORMATS:
        raise InputError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    folders = [_folder(d) for d in dirs]
    missing = [
        f"DIR: not a folder: {d}" for d, f in zip(dirs, folders, strict=True) if not f.is_dir()
    ]
    if missing:
        raise InputError(missing)
    rep = collect.report(collect.merge_rows(collect.find_jobs(folders)))
    if fmt == "json":
        text = json.dumps(rep, indent=2) + "\n"
    elif fmt == "md":
        text = render.markdown(rep)
    elif fmt == "html":
        text = render.html_page(rep)
    else:
        text = render.junit(rep)
    # A lone surrogate from a run's text has no UTF-8 form: written as its escape.
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            Path(os.path.expanduser(output)).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--output: cannot write {output}: {exc.strerror or exc}") from None
    return 0
