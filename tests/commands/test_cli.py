"""The command line of docs/output.md, through the entry point and a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kit.process import orkeon

from orkeon_run import __version__
from orkeon_run.__main__ import main
from orkeon_run.run.steps import STEPS

COMMANDS = [
    ["run"],
    ["validate"],
    ["hooks"],
    ["hooks", "list"],
    ["hooks", "check"],
    ["hooks", "trust"],
    ["schema"],
    ["jobs"],
    ["jobs", "validate"],
    ["jobs", "run"],
    ["jobs", "matrix"],
    ["jobs", "merge"],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_has_help(cmd, capsys):
    assert main([*cmd, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage:" in out


def test_run_help_names_every_option(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--inputs", "--workspace", "--run-dir", "--output", "--resume"):
        assert opt in out
    for step in STEPS:  # the step registry's
        assert step in out


def test_version_in_a_real_process():
    proc = orkeon("--version", env=os.environ, timeout=None)
    assert proc.returncode == 0
    assert proc.stdout == f"orkeon {__version__}\n"
    assert proc.stderr == ""


def test_console_script_is_installed():
    exe = Path(sys.executable).parent / "orkeon"
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.startswith("orkeon ")


def test_version_does_not_import_typer_or_pydantic():
    code = (
        "import sys; from orkeon_run.__main__ import main; main(['--version']);"
        "bad = [m for m in ('typer', 'pydantic', 'structlog', 'anyio', 'openai', 'anthropic')"
        " if m in sys.modules]; print(bad, file=sys.stderr); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "bogus", "--inputs", "{}"], "'bogus' is not one of"),
        (["run"], "Missing argument"),
        (["run", "dev-spec"], "--inputs: required"),
        (["frobnicate"], "No such command"),
        (["run", "dev-spec", "--inputs", "{}", "--output", "xml"], "--output"),
    ],
)
def test_usage_errors_exit_2_in_one_line(argv, expected):
    proc = orkeon(*argv, env=os.environ, timeout=None)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert lines[0].startswith("orkeon: ")


def test_a_reader_that_goes_away_gets_no_traceback():
    """`orkeon --version | true`: the pipe closes early; no traceback on stderr. (Commands
    that go through the CLI parser get the same from click.)"""
    exe = Path(sys.executable).parent / "orkeon"
    proc = subprocess.Popen([str(exe), "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before it writes: its write meets a pipe with no reader
    err = proc.stderr.read().decode()
    proc.wait(timeout=10)
    assert err == ""
    assert proc.returncode == 1


@pytest.mark.parametrize(
    "command",
    ["run", "validate", "hooks list", "hooks check", "hooks trust", "report", "init", "schema",
     "jobs validate", "jobs run", "jobs matrix", "jobs merge"],
)  # fmt: skip
def test_help_shows_no_python_types(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` names what an option takes (SRC, DIR, FILE, N, a list of choices), never a
    Python type (`<str>`, `<int>`, `<float>`)."""
    assert main([*command.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: orkeon" in out
    assert not re.search(r"<(str|int|float|bool)>", out), out
