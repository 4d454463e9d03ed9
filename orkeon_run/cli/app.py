"""The typer app (docs/output.md): `run`, `apply`, `validate`, `hooks`, `report`, `init`,
`schema`, and `jobs` (cli/jobs.py). Each command parses its arguments, calls its module
under `commands/` (imported only when it runs, so a command pays for its own imports only)
and exits with the code it returns (`exit_with`)."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..commands.knobs import (
    ConcurrencyOpt,
    MaxIdleOpt,
    MaxSecondsOpt,
    MaxTokensOpt,
    MaxTurnsOpt,
    MaxUsdOpt,
    ModelOpt,
)
from ..run.steps import STEPS
from ..vocabulary import SCHEMAS
from .base import BareOpt, InputsOpt, Output, Progress, ReportFormat, Step, WorkspaceOpt, exit_with
from .jobs import jobs_app

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
app.add_typer(jobs_app, name="jobs")


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
        typer.Option(
            "--inputs",
            metavar="SRC",
            help="JSON inline, @PATH for a file, or - for standard input.",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    run_dir: Annotated[
        str | None,
        typer.Option(
            "--run-dir",
            metavar="DIR",
            help="Where the run writes (default WORKSPACE/.orkeon/runs/RUN_ID).",
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
        typer.Option(
            "--resume", metavar="RUN_DIR", help="Continue the run in RUN_DIR with its saved inputs."
        ),
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
    max_idle: MaxIdleOpt = None,
    concurrency: ConcurrencyOpt = None,
    github_comment: Annotated[
        bool,
        typer.Option(
            "--github-comment",
            help="Keep one comment on the pull request up to date while the run goes "
            "(GitHub Actions; needs ORKEON_GITHUB_TOKEN).",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Say what would run and what it may cost; run and write nothing."
        ),
    ] = False,
    patch: Annotated[
        str | None,
        typer.Option(
            "--patch",
            metavar="FILE",
            help="dev-batches, tasks-repair, pipeline: write the run's change, scanned, as a "
            "patch for `orkeon apply`.",
        ),
    ] = None,
    bare: BareOpt = False,
) -> None:
    """Run one step with its crew (or the pipeline). Exit 0 succeeded, 1 failed, 2 bad
    input, 3 a budget ran out, 4 the model provider failed (try again later), 130
    interrupted.

    Flags win over ORKEON_* variables, which win over --inputs, then settings files, then
    the crew's defaults.
    """
    from ..commands import run as command

    exit_with(
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
            "max_idle": max_idle,
            "concurrency": concurrency,
        },
        github_comment=github_comment,
        dry_run=dry_run,
        patch=patch,
        bare=bare,
    )


class ValidateOutput(StrEnum):
    text = "text"
    json = "json"


@app.command()
def apply(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A patch `orkeon run --patch` wrote.")
    ],
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", metavar="DIR", help="The git work tree to apply it in (default .)."
        ),
    ] = None,
) -> None:
    """Check a patch (its digests, its base, its paths: no guard, none outside its manifest)
    and apply it with `git apply --index`. Exit 0 applied, 1 refused (nothing applied), 2
    bad input."""
    from ..commands import apply as command

    exit_with(command.main, file, workspace)


@app.command()
def validate(
    inputs: InputsOpt,
    step: Annotated[
        Step | None,
        typer.Option("--step", help="Also run the checks this step needs (request, plan, repair)."),
    ] = None,
    workspace: WorkspaceOpt = None,
    bare: Annotated[
        bool,
        typer.Option(
            "--bare",
            help="Check the inputs as a bare run would (or ORKEON_BARE=1), and list what a "
            "normal run would have read besides them.",
        ),
    ] = False,
    output: Annotated[
        ValidateOutput,
        typer.Option("--output", help="text (default) or json (one object on stdout)."),
    ] = ValidateOutput.text,
) -> None:
    """Parse and check the inputs and every file they name; start and stop each MCP server."""
    from ..commands import validate as command

    exit_with(
        command.main,
        inputs,
        step=step.value if step else None,
        workspace=workspace,
        bare=bare,
        output=output.value,
    )


@hooks_app.command("list")
def hooks_list(inputs: InputsOpt, workspace: WorkspaceOpt = None) -> None:
    """The hooks, numbered as the model will see them, and each role's MCP tools."""
    from ..commands import hooks

    exit_with(hooks.list_main, inputs, workspace=workspace)


@hooks_app.command("check")
def hooks_check(
    inputs: InputsOpt,
    tool: Annotated[
        str, typer.Option("--tool", metavar="NAME", help="The sample call's tool.")
    ] = "file_read",
    path: Annotated[
        str, typer.Option("--path", metavar="PATH", help="The sample call's path.")
    ] = "README.md",
    workspace: WorkspaceOpt = None,
) -> None:
    """Run each hook once on a sample call and print what the model would read."""
    from ..commands import hooks

    exit_with(hooks.check_main, inputs, tool=tool, path=path, workspace=workspace)


@hooks_app.command("trust")
def hooks_trust(
    workspace: WorkspaceOpt = None,
    inputs: Annotated[
        str | None,
        typer.Option(
            "--inputs",
            metavar="SRC",
            help="Inputs whose instructions.files names the instruction files to trust.",
        ),
    ] = None,
) -> None:
    """Trust the workspace's .orkeon/settings.json, .orkeon/crews/, .orkeon/checks/,
    .mcp.json, plugin folders and instruction files (AGENTS.md, CLAUDE.md) as they are."""
    from ..commands import hooks

    exit_with(hooks.trust_main, workspace, inputs)


@app.command()
def report(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="The run directory to report on.")
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
    from ..commands import report as command

    exit_with(command.main, str(run_dir), format.value, out)


SchemaName = StrEnum("SchemaName", {n: n for n in SCHEMAS})  # type: ignore[misc]


class CiEngine(StrEnum):
    github = "github"
    gitlab = "gitlab"


@app.command()
def init(
    workspace: WorkspaceOpt = None,
    ci: Annotated[CiEngine, typer.Option("--ci", help="The workflow to write.")] = CiEngine.github,
    model: Annotated[
        str, typer.Option("--model", metavar="PROVIDER:NAME", help="The model the inputs name.")
    ] = "anthropic:claude-sonnet-4-5",
    install: Annotated[
        str | None,
        typer.Option("--install", metavar="PIP-SPEC", help="How the workflow installs orkeon."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the files it writes.")] = False,
) -> None:
    """Write a starter setup: a guard hook, a crew to edit, the inputs and a CI workflow."""
    from ..commands import init as command

    exit_with(command.main, workspace, ci=ci.value, model=model, install=install, force=force)


@app.command()
def schema(
    name: Annotated[SchemaName, typer.Argument(metavar="NAME", help="The document.")],
) -> None:
    """Print the JSON Schema of a document."""
    from ..commands import schema as command

    exit_with(command.main, name.value)
