"""The command line (INTERFACE section 1) as a typer app. Each command parses, calls one
core function, renders, and returns an exit code; errors are mapped to exit codes by
`actions.guarded` only. A plain `run` or `validate` command line never gets here (see
`fastargs.py`); help and every usage error do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer

from . import __version__
from .errors import EXIT_USAGE, InputError, Interrupted

app = typer.Typer(
    name="orkeon",
    help="Run one step of a development workflow with a crew of model-driven agents, headless.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
hooks_app = typer.Typer(help="List, check and trust hooks.", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")
jobs_app = typer.Typer(
    help="Many jobs: check a job list, run one shard of it, slice it for CI, merge the results.",
    no_args_is_help=True,
)
app.add_typer(jobs_app, name="jobs")


class Output(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class Step(StrEnum):
    dev_spec = "dev-spec"
    dev_plan = "dev-plan"
    dev_batches = "dev-batches"
    tasks_repair = "tasks-repair"


InputsOpt = Annotated[
    str, typer.Option("--inputs", help="JSON inline, @PATH for a file, or - for standard input.")
]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option("--workspace", help="Folder the crew works in (default: inputs, then .)."),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"orkeon {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """orkeon: a headless crew orchestrator for AI coding agents."""


def _load(src: str) -> Any:
    from .inputs import load_document

    return load_document(src)


def _exit_with(action: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Run one of `actions`' commands and exit with its code. Ctrl-C inside it becomes
    `Interrupted`, which `actions.guarded` reports as the fast path does (typer would
    turn it into a silent exit 130)."""
    try:
        code = action(*args, **kwargs)
    except KeyboardInterrupt:
        raise Interrupted("interrupted") from None
    raise typer.Exit(code)


@app.command()
def run(
    step: Annotated[Step, typer.Argument(help="dev-spec | dev-plan | dev-batches | tasks-repair")],
    inputs: Annotated[
        str | None,
        typer.Option("--inputs", help="JSON inline, @PATH for a file, or - for standard input."),
    ] = None,
    workspace: WorkspaceOpt = None,
    run_dir: Annotated[
        str | None,
        typer.Option(
            "--run-dir", help="Where the run writes (default WORKSPACE/.orkeon/runs/RUN_ID)."
        ),
    ] = None,
    output: Annotated[
        Output | None,
        typer.Option(
            "--output", help="text (default on a terminal), json (default otherwise), stream-json."
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Continue the run in RUN_DIR with its saved inputs."),
    ] = None,
) -> None:
    """Run one step with its crew. Exit 0 succeeded, 1 failed, 2 bad input, 3 budget, 130 interrupted."""
    from . import actions

    _exit_with(
        actions.run,
        step.value,
        inputs,
        workspace=workspace,
        run_dir=run_dir,
        output=output.value if output else None,
        resume=resume,
    )


@app.command()
def validate(
    inputs: InputsOpt,
    step: Annotated[
        Step | None,
        typer.Option("--step", help="Also run the checks this step needs (request, plan, repair)."),
    ] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Parse and check the inputs and every file they name; run nothing."""
    from . import actions

    _exit_with(actions.validate, inputs, step=step.value if step else None, workspace=workspace)


@hooks_app.command("list")
def hooks_list(inputs: InputsOpt, workspace: WorkspaceOpt = None) -> None:
    """The hooks, numbered as the model will see them."""
    from .hookcheck import list_lines, settings_lines
    from .prepare import prepare, stdin_tty

    prep = prepare(_load(inputs), step=None, workspace=workspace, stdin_is_tty=stdin_tty())
    for line in prep.warnings:
        typer.echo(f"warning: {line}", err=True)
    for line in list_lines(prep.inputs.native_hooks) + settings_lines(prep.settings_config):
        typer.echo(line)


@hooks_app.command("check")
def hooks_check(
    inputs: InputsOpt,
    tool: Annotated[str, typer.Option("--tool", help="The sample call's tool.")] = "file_read",
    path: Annotated[str, typer.Option("--path", help="The sample call's path.")] = "README.md",
    workspace: WorkspaceOpt = None,
) -> None:
    """Run each hook once on a sample call and print what the model would read."""
    import anyio

    from .hookcheck import check
    from .prepare import prepare, stdin_tty
    from .rules import canonical_tool
    from .tools import TOOLS

    if canonical_tool(tool) not in TOOLS:
        raise InputError(f"--tool: unknown tool {tool!r} (one of: {', '.join(TOOLS)})")
    prep = prepare(_load(inputs), step=None, workspace=workspace, stdin_is_tty=stdin_tty())
    lines, code = anyio.run(
        lambda: check(
            prep.inputs.native_hooks,
            workspace=prep.workspace,
            shell_rules=prep.shell_rules,
            tool=tool,
            path=path,
            settings_config=prep.settings_config,
        )
    )
    for line in lines:
        typer.echo(line)
    raise typer.Exit(code)


@hooks_app.command("trust")
def hooks_trust(workspace: WorkspaceOpt = None) -> None:
    """Trust the workspace's .orkeon/settings.json and .orkeon/crews/ as they are now."""
    from pathlib import Path

    from .trust import (
        crews_dir,
        project_settings_path,
        record_crews_trust,
        record_trust,
    )

    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    ws = Path(os.path.expanduser(workspace or "."))
    if not ws.is_dir():
        raise InputError(f"--workspace: not a directory: {ws}")
    ws = ws.resolve()
    trusted = []
    if project_settings_path(ws).is_file():
        trusted.append((project_settings_path(ws), record_trust(ws)))
    if crews_dir(ws).is_dir():
        trusted.append((crews_dir(ws), record_crews_trust(ws)))
    if not trusted:
        raise InputError(
            f"--workspace: nothing to trust in {ws} (no .orkeon/settings.json, no .orkeon/crews/)"
        )
    for path, digest in trusted:
        typer.echo(f"trusted {path} ({digest.removeprefix('sha256:')[:12]})")


@app.command()
def schema(
    name: Annotated[str, typer.Argument(help="inputs | plan | script | result | event | crew")],
) -> None:
    """Print the JSON Schema of a document."""
    from .schema import NAMES, text

    if name not in NAMES:
        raise InputError(f"NAME: unknown schema {name!r} (one of: {', '.join(NAMES)})")
    sys.stdout.write(text(name))


class Engine(StrEnum):
    github = "github"
    gitlab = "gitlab"
    kubernetes = "kubernetes"


class ReportFormat(StrEnum):
    json = "json"
    md = "md"
    html = "html"
    junit = "junit"


JobsArg = Annotated[
    str,
    typer.Argument(metavar="JOBS", help="The job list: a JSON Lines file (or a JSON array)."),
]


@jobs_app.command("validate")
def jobs_validate(jobs: JobsArg) -> None:
    """Check the whole job list and every job's inputs; run nothing."""
    from .jobs import commands

    _exit_with(commands.validate, jobs)


@jobs_app.command("run")
def jobs_run(
    jobs: JobsArg,
    out: Annotated[str, typer.Option("--out", help="Folder that gets one run directory per job.")],
    shard: Annotated[str, typer.Option("--shard", help="I/N: run shard I of N.")] = "1/1",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Jobs at a time.")] = 4,
) -> None:
    """Run one shard of the list. Exit 0 all succeeded, 1 some failed, 3 budgets, 4 provider, 130 interrupted."""
    from .jobs import commands

    _exit_with(commands.run, jobs, shard=shard, concurrency=concurrency, out=out)


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
    from .jobs import commands

    _exit_with(
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
        ReportFormat, typer.Option("--format", help="json | md | html | junit")
    ] = ReportFormat.json,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write here, not stdout.")
    ] = None,
) -> None:
    """One report over every job found in or below each DIR."""
    from .jobs import commands

    _exit_with(commands.merge, dirs, fmt=fmt.value, output=output)


def _parser_error(exc: Exception) -> int | None:
    """The exit code of typer's own exceptions (usage errors, abort), else None."""
    from typer.exceptions import Abort, TyperException

    if isinstance(exc, Abort):
        sys.stderr.write("orkeon: interrupted\n")
        return 130
    if isinstance(exc, TyperException):
        # Usage errors from the parser: one line, like every other bad input.
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        sys.stderr.write(f"orkeon: {' '.join(message.split())} (see orkeon --help)\n")
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    return None


def _invoke(argv: list[str]) -> int:
    try:
        # Without standalone mode, typer returns the code of `typer.Exit` instead of raising.
        rc = app(args=argv, prog_name="orkeon", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return exc.exit_code


def run_cli(argv: list[str]) -> int:
    """Run the typer app; map every exception to the exit-code contract, one line each."""
    from .actions import guarded

    return guarded(lambda: _invoke(argv), _parser_error)
