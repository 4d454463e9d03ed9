"""`orkeon jobs` (docs/scale.md): check a job list, run one shard of it, slice it for CI,
merge the results. Each command calls `commands/jobs.py`, imported when it runs."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .base import BareOpt, MergeFormat, exit_with

jobs_app = typer.Typer(
    help="Many jobs: check a job list, run one shard of it, slice it for CI, merge the results.",
    no_args_is_help=True,
)


class Engine(StrEnum):
    github = "github"
    gitlab = "gitlab"
    kubernetes = "kubernetes"


# The batch's cap (jobs/cap.py): one for every job the process runs, as text (none: no cap).
CapUsd = Annotated[
    str | None,
    typer.Option(
        "--max-usd", metavar="USD", help="Cost cap over all the jobs (or ORKEON_JOBS_MAX_USD)."
    ),
]
CapTokens = Annotated[
    str | None,
    typer.Option(
        "--max-tokens",
        metavar="N",
        help="Tokens cap over all the jobs (or ORKEON_JOBS_MAX_TOKENS).",
    ),
]
CapSeconds = Annotated[
    str | None,
    typer.Option(
        "--max-seconds",
        metavar="SECONDS",
        help="Charged seconds cap over all the jobs (or ORKEON_JOBS_MAX_SECONDS).",
    ),
]

# A Path, so the help says `<path>` rather than a Python type; the commands take its text.
JobsArg = Annotated[
    Path,
    typer.Argument(metavar="JOBS", help="The job list: a JSON Lines file (or a JSON array)."),
]


@jobs_app.command("validate")
def jobs_validate(jobs: JobsArg, bare: BareOpt = False) -> None:
    """Check the whole job list and every job's inputs; run nothing."""
    from ..commands import jobs as commands

    exit_with(commands.validate, str(jobs), bare=bare)


@jobs_app.command("run")
def jobs_run(
    jobs: JobsArg,
    out: Annotated[
        str,
        typer.Option("--out", metavar="DIR", help="Folder that gets one run directory per job."),
    ],
    shard: Annotated[
        str, typer.Option("--shard", metavar="I/N", help="I/N: run shard I of N.")
    ] = "1/1",
    concurrency: Annotated[
        int, typer.Option("--concurrency", metavar="K", help="Jobs at a time.")
    ] = 4,
    max_usd: CapUsd = None,
    max_tokens: CapTokens = None,
    max_seconds: CapSeconds = None,
    bare: BareOpt = False,
) -> None:
    """Run one shard of the list. Exit 0 all succeeded, 1 some failed, 3 budgets (or jobs
    skipped for the batch's cap), 4 provider, 130 interrupted."""
    from ..commands import jobs as commands

    caps = {"usd": max_usd, "tokens": max_tokens, "seconds": max_seconds}
    exit_with(
        commands.run, str(jobs), shard=shard, concurrency=concurrency, out=out, caps=caps, bare=bare
    )


@jobs_app.command("matrix")
def jobs_matrix(
    jobs: JobsArg,
    shards: Annotated[int, typer.Option("--shards", metavar="N", help="How many shards.")],
    engine: Annotated[Engine, typer.Option("--for", help="github | gitlab | kubernetes")],
    image: Annotated[
        str,
        typer.Option(
            "--image", metavar="IMAGE", help="kubernetes: the container image with orkeon."
        ),
    ] = "orkeon:latest",
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", metavar="K", help="kubernetes: jobs at a time in each pod."),
    ] = 4,
    parallelism: Annotated[
        int | None,
        typer.Option(
            "--parallelism", metavar="N", help="kubernetes: pods at a time (default: all)."
        ),
    ] = None,
    max_usd: CapUsd = None,
    max_tokens: CapTokens = None,
    max_seconds: CapSeconds = None,
    per_shard: Annotated[
        bool, typer.Option("--per-shard", help="Each shard gets the whole cap (default: cap / N).")
    ] = False,
) -> None:
    """Print the matrix (github, gitlab) or the Indexed Job manifest (kubernetes) for the shards."""
    from ..commands import jobs as commands

    exit_with(
        commands.matrix,
        str(jobs),
        shards=shards,
        engine=engine.value,
        image=image,
        concurrency=concurrency,
        parallelism=parallelism,
        caps={"usd": max_usd, "tokens": max_tokens, "seconds": max_seconds},
        per_shard=per_shard,
    )


@jobs_app.command("merge")
def jobs_merge(
    dirs: Annotated[
        list[str],
        typer.Argument(metavar="DIR", help="Folders holding job folders (--out of each shard)."),
    ],
    fmt: Annotated[
        MergeFormat, typer.Option("--format", help="json (default), md, html or junit.")
    ] = MergeFormat.json,
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FILE", help="Write here, not stdout.")
    ] = None,
) -> None:
    """One report over every job found in or below each DIR."""
    from ..commands import jobs as commands

    exit_with(commands.merge, dirs, fmt=fmt.value, output=output)
