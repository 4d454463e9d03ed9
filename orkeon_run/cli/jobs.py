"""`orkeon jobs` (docs/scale.md): check a job list, run one shard of it, slice it for CI,
merge the results. Each command calls `commands/jobs.py`, imported when it runs."""

from enum import StrEnum
from typing import Annotated

import typer

from .base import ReportFormat, exit_with

jobs_app = typer.Typer(
    help="Many jobs: check a job list, run one shard of it, slice it for CI, merge the results.",
    no_args_is_help=True,
)


class Engine(StrEnum):
    github = "github"
    gitlab = "gitlab"
    kubernetes = "kubernetes"


JobsArg = Annotated[
    str,
    typer.Argument(metavar="JOBS", help="The job list: a JSON Lines file (or a JSON array)."),
]


@jobs_app.command("validate")
def jobs_validate(jobs: JobsArg) -> None:
    """Check the whole job list and every job's inputs; run nothing."""
    from ..commands import jobs as commands

    exit_with(commands.validate, jobs)


@jobs_app.command("run")
def jobs_run(
    jobs: JobsArg,
    out: Annotated[str, typer.Option("--out", help="Folder that gets one run directory per job.")],
    shard: Annotated[str, typer.Option("--shard", help="I/N: run shard I of N.")] = "1/1",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Jobs at a time.")] = 4,
) -> None:
    """Run one shard of the list. Exit 0 all succeeded, 1 some failed, 3 budgets, 4 provider, 130 interrupted."""
    from ..commands import jobs as commands

    exit_with(commands.run, jobs, shard=shard, concurrency=concurrency, out=out)


@jobs_app.command("matrix")
def jobs_matrix(
    jobs: JobsArg,
    shards: Annotated[int, typer.Option("--shards", help="How many shards.")],
    engine: Annotated[Engine, typer.Option("--for", help="github | gitlab | kubernetes")],
    image: Annotated[
        str, typer.Option("--image", help="kubernetes: the container image with orkeon.")
    ] = "orkeon:latest",
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="kubernetes: jobs at a time in each pod.")
    ] = 4,
    parallelism: Annotated[
        int | None, typer.Option("--parallelism", help="kubernetes: pods at a time (default: all).")
    ] = None,
) -> None:
    """Print the matrix (github, gitlab) or the Indexed Job manifest (kubernetes) for the shards."""
    from ..commands import jobs as commands

    exit_with(
        commands.matrix,
        jobs,
        shards=shards,
        engine=engine.value,
        image=image,
        concurrency=concurrency,
        parallelism=parallelism,
    )


@jobs_app.command("merge")
def jobs_merge(
    dirs: Annotated[
        list[str],
        typer.Argument(metavar="DIR", help="Folders holding job folders (--out of each shard)."),
    ],
    fmt: Annotated[
        ReportFormat, typer.Option("--format", help="json | md | html | junit (not patch)")
    ] = ReportFormat.json,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write here, not stdout.")
    ] = None,
) -> None:
    """One report over every job found in or below each DIR."""
    from ..commands import jobs as commands

    exit_with(commands.merge, dirs, fmt=fmt.value, output=output)
