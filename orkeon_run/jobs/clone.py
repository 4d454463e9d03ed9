"""A git workspace, cloned shallow (`--depth 1`) into `OUT/ID/workspace` before the job runs.

The clone is made in `OUT/ID/.workspace.partial` and renamed when it is complete, so a
killed clone is never taken for a workspace. A workspace already there (an earlier
attempt's) is used as it is: the run is resumed in it, with what that attempt changed.

`ref` is a branch or a tag (`git clone --branch`), or a full commit id (fetched by id,
which the server must allow: GitHub and GitLab do, and so do local repositories). No ref:
the remote's default branch. git never prompts (GIT_TERMINAL_PROMPT=0): a repository that
needs credentials the environment does not give fails the job instead of hanging it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import anyio

from ..environ import scrubbed
from .jobdir import WORKSPACE
from .joblist import GitSource

COMMIT_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
PARTIAL = ".workspace.partial"


class CloneFailed(Exception):
    """One line: the git command that failed and its last line of output."""


async def workspace(source: GitSource, jd: Path) -> Path:
    """The job's workspace folder, cloned if it is not there yet."""
    target = jd / WORKSPACE
    if target.is_dir():
        return target.resolve()
    partial = jd / PARTIAL
    shutil.rmtree(partial, ignore_errors=True)
    if source.ref and COMMIT_RE.match(source.ref):
        await _git("init", "-q", str(partial))
        await _git("fetch", "-q", "--depth", "1", "--", source.url, source.ref, cwd=partial)
        await _git("checkout", "-q", "--detach", "FETCH_HEAD", cwd=partial)
    else:
        branch = ["--branch", source.ref] if source.ref else []
        await _git("clone", "-q", "--depth", "1", *branch, "--", source.url, str(partial))
    os.replace(partial, target)
    return target.resolve()


async def _git(*args: str, cwd: Path | None = None) -> None:
    # The operator's git and URL: its credentials kept (a private repository), orkeon's own
    # variables not.
    env = {**scrubbed(credentials=False), "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = await anyio.run_process(["git", *args], input=b"", check=False, cwd=cwd, env=env)
    except OSError as exc:  # no git on PATH
        raise CloneFailed(f"git {args[0]} could not run: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else "no output"
        raise CloneFailed(f"git {args[0]} exited {done.returncode}: {last}")
