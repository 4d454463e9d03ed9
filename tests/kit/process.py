"""`orkeon` as a child process, run to its end: the one way a test runs the real command
and reads what it printed (kit.spawn starts one a test signals or reads while it runs)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import ORKEON
from .steps import environ


def orkeon(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | int | None = subprocess.DEVNULL,
    timeout: float | None = 120,
    wrap: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`orkeon ARGS` (ORKEON, behind `wrap` when given) in `cwd`; its exit code, stdout and
    stderr as text.

    - `env` is the child's whole environment; by default orkeon's own in the test's folder
      (`steps.environ(cwd)`: nothing from the developer's ORKEON_*, a config folder
      cwd/config), so the default needs `cwd`.
    - `stdin`: a str is written to it; otherwise a file descriptor (or None: this
      process's). By default /dev/null, never a terminal (as under pytest's capture), so a
      run reads no answer from the keyboard and ORKEON_TRUST_PROJECT_HOOKS is honoured.
    - `timeout` is a hang guard in seconds (None: the suite's time-out is)."""
    if env is None:
        if cwd is None:
            raise ValueError("kit.process.orkeon: the default environment needs cwd")
        env = environ(cwd)
    feed = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run(
        [*wrap, *ORKEON, *args], cwd=cwd, env=dict(env), capture_output=True, text=True,
        timeout=timeout, **feed,
    )  # fmt: skip
