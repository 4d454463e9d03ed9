"""The command line (docs/output.md, "Commands"): one typer app. Each command parses its
arguments, calls its module under `commands/` (imported only when it runs, so a command
pays for its own imports only) and exits with the code it returns. Every exception becomes
one stderr line and an exit code here, in `guarded`, and nowhere else.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer

from . import __version__
from .commands.knobs import (
    ConcurrencyOpt,
    MaxSecondsOpt,
    MaxTokensOpt,
    MaxTurnsOpt,
    MaxUsdOpt,
    ModelOpt,
)
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, InputError, OrkeonError, exit_code_for, one_line
from .run.steps import STEPS

app = typer.Typer(
    name="orkeon",
    help="Run one step of a development workflow with a crew of model-driven agents, headless.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, powershell)
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

Step = StrEnum("Step", {s.replace("-", "_"): s for s in STEPS})  # type: ignore[misc]


class Output(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class Progress(StrEnum):
    auto = "auto"
    live = "live"
    plain = "plain"
    none = "none"


InputsOpt = Annotated[
    str, typer.Option("--inputs", help="JSON inline, @PATH for a file, or - for standard input.")
]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option("--workspace", help="Folder the crew works in (default: inputs, then .)."),
]


def _exit_with(command: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Run a command and exit with its code. Ctrl-C inside it is reported like any other
    interruption (typer would turn it into a silent exit 1)."""
    try:
        code = command(*args, **kwargs)
    except KeyboardInterrupt:
        from .errors import Interrupted

        raise Interrupted("interrupted") from None
    raise typer.Exit(code)


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


@app.command()
def run(
    step: Annotated[Step, typer.Argument(help=" | ".join(STEPS))],
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
    progress: Annotated[
        Progress | None,
        typer.Option(
            "--progress",
            help="Progress on stderr: auto (live on a terminal, else plain; default, or "
            "ORKEON_PROGRESS), live, plain, none.",
        ),
    ] = None,
    model: ModelOpt = None,
    max_usd: MaxUsdOpt = None,
    max_turns: MaxTurnsOpt = None,
    max_tokens: MaxTokensOpt = None,
    max_seconds: MaxSecondsOpt = None,
    concurrency: ConcurrencyOpt = None,
) -> None:
    """Run one step with its crew (or the pipeline). Exit 0 succeeded, 1 failed, 2 bad
    input, 3 a budget ran out, 4 the model provider failed (try again later), 130
    interrupted.

    Flags win over ORKEON_* variables, which win over --inputs, then settings files, then
    the crew's defaults.
    """
    from .commands import run as command

    _exit_with(
        command.main,
        step.value,
        inputs,
        workspace=workspace,
        run_dir=run_dir,
        output=output.value if output else None,
        resume=resume,
        progress=progress.value if progress else None,
        knobs={
            "model": model,
            "max_usd": max_usd,
            "max_turns": max_turns,
            "max_tokens": max_tokens,
            "max_seconds": max_seconds,
            "concurrency": concurrency,
        },
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
    """Parse and check the inputs and every file they name; start and stop each MCP server."""
    from .commands import validate as command

    _exit_with(command.main, inputs, step=step.value if step else None, workspace=workspace)


@hooks_app.command("list")
def hooks_list(inputs: InputsOpt, workspace: WorkspaceOpt = None) -> None:
    """The hooks, numbered as the model will see them, and each role's MCP tools."""
    from .commands import hooks

    _exit_with(hooks.list_main, inputs, workspace=workspace)


@hooks_app.command("check")
def hooks_check(
    inputs: InputsOpt,
    tool: Annotated[str, typer.Option("--tool", help="The sample call's tool.")] = "file_read",
    path: Annotated[str, typer.Option("--path", help="The sample call's path.")] = "README.md",
    workspace: WorkspaceOpt = None,
) -> None:
    """Run each hook once on a sample call and print what the model would read."""
    from .commands import hooks

    _exit_with(hooks.check_main, inputs, tool=tool, path=path, workspace=workspace)


@hooks_app.command("trust")
def hooks_trust(workspace: WorkspaceOpt = None) -> None:
    """Trust the workspace's .orkeon/settings.json, .orkeon/crews/ and .mcp.json as they are."""
    from .commands import hooks

    _exit_with(hooks.trust_main, workspace)


class ReportFormat(StrEnum):
    md = "md"
    html = "html"
    junit = "junit"
    json = "json"
    patch = "patch"


@app.command()
def report(
    run_dir: Annotated[
        str, typer.Argument(metavar="RUN_DIR", help="The run directory to report on.")
    ],
    format: Annotated[
        ReportFormat, typer.Option("--format", help="md (default), html, junit, json or patch.")
    ] = ReportFormat.md,
    out: Annotated[
        str | None,
        typer.Option("-o", "--output", "--out", metavar="FILE", help="Write to FILE, not stdout."),
    ] = None,
) -> None:
    """Report on one run directory: Markdown, HTML, JUnit XML, JSON, or its change (patch)."""
    from .commands import report as command

    _exit_with(command.main, run_dir, format.value, out)


@app.command()
def schema(
    name: Annotated[str, typer.Argument(help="inputs | plan | script | result | event | crew")],
) -> None:
    """Print the JSON Schema of a document."""
    from .commands import schema as command

    _exit_with(command.main, name)


# --- orkeon jobs ------------------------------------------------------------------------


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
    from .commands import jobs as commands

    _exit_with(commands.validate, jobs)


@jobs_app.command("run")
def jobs_run(
    jobs: JobsArg,
    out: Annotated[str, typer.Option("--out", help="Folder that gets one run directory per job.")],
    shard: Annotated[str, typer.Option("--shard", help="I/N: run shard I of N.")] = "1/1",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Jobs at a time.")] = 4,
) -> None:
    """Run one shard of the list. Exit 0 all succeeded, 1 some failed, 3 budgets, 4 provider, 130 interrupted."""
    from .commands import jobs as commands

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
    from .commands import jobs as commands

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
        ReportFormat, typer.Option("--format", help="json | md | html | junit (not patch)")
    ] = ReportFormat.json,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write here, not stdout.")
    ] = None,
) -> None:
    """One report over every job found in or below each DIR."""
    from .commands import jobs as commands

    _exit_with(commands.merge, dirs, fmt=fmt.value, output=output)


# --- the one map from exceptions to exit codes and stderr lines -------------------------


def _parser_error(exc: Exception) -> int | None:
    """The exit code of typer's own exceptions (usage errors, abort), else None."""
    from typer.exceptions import Abort, TyperException

    if isinstance(exc, Abort):
        sys.stderr.write("orkeon: interrupted\n")
        return EXIT_INTERRUPTED
    if type(exc).__name__ == "NoArgsIsHelpError" and getattr(exc, "ctx", None) is not None:
        # `orkeon` (or `orkeon hooks`, `orkeon jobs`) alone: the help, whole and readable,
        # as --help prints it; exit 2, as the parser's, since nothing ran (a CI script
        # whose command word came out empty must not pass).
        sys.stdout.write(exc.ctx.get_help() + "\n")  # type: ignore[attr-defined]
        return EXIT_USAGE
    if isinstance(exc, TyperException):
        # Usage errors from the parser: one line, like every other bad input.
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        sys.stderr.write(f"orkeon: {' '.join(message.split())} (see orkeon --help)\n")
        return int(getattr(exc, "exit_code", EXIT_USAGE))
    return None


def guarded(call: Callable[[], int]) -> int:
    """Run `call`; map every exception to the exit-code contract, one stderr line each."""
    try:
        return call()
    except InputError as exc:
        for line in exc.problems:
            sys.stderr.write(f"orkeon: {one_line(line)}\n")
        return EXIT_USAGE
    except OrkeonError as exc:
        sys.stderr.write(f"orkeon: {one_line(str(exc))}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt:
        sys.stderr.write("orkeon: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`| head`): say nothing
        return 1
    except Exception as exc:
        code = _parser_error(exc)
        if code is not None:
            return code
        if os.environ.get("ORKEON_DEBUG"):
            raise
        sys.stderr.write(
            f"orkeon: internal error: {type(exc).__name__}: {one_line(str(exc))} "
            "(set ORKEON_DEBUG=1 for a traceback)\n"
        )
        return 1


def _invoke(argv: list[str]) -> int:
    try:
        # Without standalone mode, typer returns the code of `typer.Exit` instead of raising.
        rc = app(args=argv, prog_name="orkeon", standalone_mode=False)
        return rc if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # shell completion answers, then exits (click's way)
        return exc.code if isinstance(exc.code, int) else 0


def run_cli(argv: list[str]) -> int:
    """Run the typer app on `argv`; the exit code, every error mapped by `guarded`."""
    return guarded(lambda: _invoke(argv))
