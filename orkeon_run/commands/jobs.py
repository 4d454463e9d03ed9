"""The four `orkeon jobs` commands once their arguments are parsed: each returns its exit
code, prints its data on stdout and its lines for people on stderr. Bad input raises
InputError (exit 2, one line per problem, nothing run), as every orkeon command does.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio

from .. import units
from ..errors import InputError
from ..escape import write_line
from ..jobs import collect, execute, jobdir, joblist, render
from ..jobs import matrix as engines
from ..jobs.cap import FLAGS, BatchCap, merged
from ..jobs.shards import check_count, parse_shard, shard_of

FORMATS = ("json", "md", "html", "junit")
MAX_CONCURRENCY = 256


def _warn(line: str) -> None:
    write_line(sys.stderr, f"warning: {line}")


def _folder(text: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    return Path(os.path.expanduser(text)).resolve()


def validate(src: str, *, bare: bool = False) -> int:
    """Check the whole list: its shape, and every job's inputs (as bare runs: `bare`)."""
    jobs = joblist.read(src)
    joblist.check_inputs(jobs.jobs, jobs.name, warn=_warn, bare=bare)
    n = len(jobs.jobs)
    sys.stdout.write(f"{units.count(n, 'job')} {'is' if n == 1 else 'are'} valid\n")
    return 0


def batch_caps(given: Mapping[str, str | None], environ: Mapping[str, str]) -> dict[str, float]:
    """The batch's caps (jobs/cap.py) from `--max-usd/--max-tokens/--max-seconds`, else
    `ORKEON_JOBS_MAX_USD/_TOKENS/_SECONDS` (what `jobs matrix` gives each shard): each a
    number above 0, or `none`. InputError naming the flag or variable."""
    caps: dict[str, float] = {}
    for key, flag in FLAGS.items():
        var = f"ORKEON_JOBS_MAX_{key.upper()}"
        raw, where = given.get(key), flag
        if raw is None and environ.get(var):
            raw, where = environ[var], f"environment variable {var}"
        if raw is None or raw.strip().lower() in ("none", "null"):
            continue
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"{where}: {raw!r} is not a number") from None
        if not math.isfinite(value) or value <= 0 or (key == "tokens" and value < 1):
            raise InputError(f"{where}: must be greater than 0, not {raw}")
        caps[key] = math.floor(value) if key == "tokens" else value
    return caps


def run(
    src: str,
    *,
    shard: str,
    concurrency: int,
    out: str,
    caps: Mapping[str, str | None] | None = None,
    bare: bool = False,
) -> int:
    """Run shard I/N of the list into OUT (execute.py); print the summary as JSON. `caps`:
    the batch's (`--max-usd` ... as text, jobs/cap.py). `bare`: every job is a bare run
    (docs/inputs.md, "Hermetic runs"; ORKEON_BARE=1 does the same)."""
    index, total = parse_shard(shard)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise InputError(f"--concurrency: {concurrency} is not between 1 and {MAX_CONCURRENCY}")
    limits = batch_caps(caps or {}, os.environ)
    jobs = joblist.read(src)
    mine = [job for job in jobs.jobs if shard_of(job.id, total) == index]
    joblist.check_inputs(mine, jobs.name, warn=_warn, need_price="usd" in limits, bare=bare)
    folder = _folder(out)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out: not a folder: {out}")
    conflicts = [jobdir.conflict(folder / job.id, job.id, job.fingerprint) for job in mine]
    problems = [f"--out: {c}" for c in conflicts if c]
    if problems:
        raise InputError(problems)
    cap = BatchCap(limits, concurrency) if limits else None
    code, summary = anyio.run(
        execute.run_shard, mine, folder, f"{index}/{total}", concurrency, cap, bare
    )
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
    caps: Mapping[str, str | None] | None = None,
    per_shard: bool = False,
) -> int:
    """Print what `engine` needs to run the list in `shards` shards (matrix.py). `caps`:
    the batch's, split across the shards (each `cap / shards`; `per_shard`: each shard
    gets the whole of it)."""
    check_count(shards)
    limits = batch_caps(caps or {}, {})
    split = {k: (v if per_shard else v / shards) for k, v in limits.items()}
    if engine not in engines.ENGINES:
        raise InputError(f"--for: {engine!r} is not one of {', '.join(engines.ENGINES)}")
    if parallelism is not None and parallelism < 1:
        raise InputError(f"--parallelism: {parallelism} is not 1 or more")
    jobs = joblist.read(src)
    if engine == "github":
        text = engines.github(jobs, shards, split)
    elif engine == "gitlab":
        text = engines.gitlab(jobs, shards, split)
    else:
        text = engines.kubernetes(
            jobs, shards, image=image, concurrency=concurrency, parallelism=parallelism,
            caps=split,
        )  # fmt: skip
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
    found_caps = collect.find_caps(folders)
    if found_caps:
        rep["cap"] = merged(found_caps)
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
