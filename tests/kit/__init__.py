"""The one kit every test builds with (docs/architecture.md, "Tests"). Its modules:

- `kit.pipeline`: the real Pipeline as a step wires it, a checked call as the pipeline
  hands it to hooks and tools: the one way a test builds a pipeline.
- `kit.steps`: a git workspace in tmp_path, a step run as `orkeon run` runs it, inputs for
  the scripted model, and readers of what the run wrote.
- `kit.cli`: `orkeon` in this process through its entry point, in a clean environment.
- `kit.process`: `orkeon` in a child process, run to its end (the one way a test does).
- `kit.agent`: one role's agent over real parts (pipeline, hooks, ledger, transcript).
- `kit.hooks`: settings-shape hooks driven directly; answer.py's command.
- `kit.jobs`, `kit.mcp`, `kit.report`, `kit.sandbox`: what the tests of those parts share.
- `kit.fakes`: the fake servers, on 127.0.0.1 only: the providers' wire protocols and an
  MCP server.

Here: where the checkout, tests/data and the fakes are, and git with a fixed identity.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the checkout
DATA = ROOT / "tests" / "data"  # hook scripts, fault scripts, fixtures: real files
FAKES = Path(__file__).resolve().parent / "fakes"  # the fake servers, run as programs too
ORKEON = [sys.executable, "-m", "orkeon_run"]  # the real command, in a child process
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` with a fixed identity and no user or system config; its stdout.
    A failing git fails the test."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def spawn(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    """`orkeon ARGS` started in a child process (ORKEON), its stdout and stderr piped as
    text: for a test that signals it or reads it while it runs."""
    return subprocess.Popen(
        [*ORKEON, *args], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
