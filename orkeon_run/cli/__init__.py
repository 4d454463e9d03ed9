"""The command line (docs/output.md): one typer app (cli/app.py, with
`orkeon jobs` in cli/jobs.py) and `run_cli`, which runs it on an argv and maps every
exception to one stderr line and an exit code (cli/exits.py, `guarded`)."""

from .app import app
from .base import Step
from .exits import guarded, run_cli

__all__ = ["Step", "app", "guarded", "run_cli"]
