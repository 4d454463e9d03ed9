"""The audit trusts nothing the model touched (issue 11 item 3), black box: a scripted role
plants what would make the audit's own git run a program (a clean filter, an fsmonitor, a
hooks path, a diff driver, a `git` early on PATH), or the workspace arrives with it; the
audit must run none of them (each would leave a marker file holding orkeon's environment,
the key included) and still see the changes. Each test then runs a plain `git` on the
same repository and watches the marker appear: the plant was live.

The roles that plant run with the sandbox off (in the sandbox `.git` is read-only): the
audit must hold without the sandbox; with it (the default), its git also runs in one."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import GIT_ENV
from kit.process import orkeon
from kit.sandbox import LINUX_ONLY, require_sandbox
from kit.steps import environ, make_workspace, scripted, shell, write

from orkeon_run.run import runner

pytestmark = LINUX_ONLY

KEY = "sk-ant-api03-the-key-the-audit-must-never-hand-on"
FILES = {
    "README.md": "# app\n",
    "src/a/x.py": "x = 1\n",
    "src/b/y.py": "y = 1\n",
    ".gitignore": ".venv/\n",
}


@pytest.fixture(scope="module", autouse=True)
def sandbox_works_here() -> None:
    require_sandbox()


def git(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A plain git, as a person or a role would run it (the control)."""
    return subprocess.run(
        ["git", *args], cwd=ws, capture_output=True, text=True,
        env=env or {**os.environ, **GIT_ENV},
    )  # fmt: skip


def workspace(tmp: Path) -> Path:
    """A repository whose index holds stat data older than anything the run writes, so
    that a file the role rewrites is one git must compare by content."""
    ws = make_workspace(tmp, FILES)
    old = time.time() - 3600
    for path in ws.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, (old, old))
    git(ws, "update-index", "--really-refresh")
    return ws


def run(tmp: Path, ws: Path, doc: dict[str, Any], **env: str) -> dict[str, Any]:
    """`orkeon run dev-batches` in-process, with the model's key in orkeon's environment."""
    with contextlib.chdir(tmp):
        go = functools.partial(
            runner.run, "dev-batches", doc, workspace=str(ws), run_dir=str(tmp / "run"),
            resume_dir=None, stream=None, environ={**environ(tmp), "ANTHROPIC_API_KEY": KEY, **env},
        )  # fmt: skip
        return anyio.run(go)


def batch(script: list[dict[str, Any]], roots: list[str], **more: Any) -> dict[str, Any]:
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": roots, "task": "t"}]}]}
    return scripted({"b1/a": [*script, {"text": "done"}]}, plan=plan, **more)


def marker_script(tmp: Path, name: str, then: str = "") -> Path:
    """A program that writes its environment to MARKER (the key would be in it)."""
    marker = tmp / f"{name}.marker"
    script = tmp / f"{name}.sh"
    script.write_text(f"#!/bin/sh\nenv > {marker}\n{then}")
    script.chmod(0o755)
    return script


def planted_config(ws: Path, extra: str) -> str:
    return (ws / ".git/config").read_text() + extra


def plant(ws: Path, when: str, files: dict[str, str]) -> list[dict[str, Any]]:
    """Put `files` (workspace paths, `.git/config` among them) in place: now, as the
    workspace arrives ("before"), or as the role's calls ("role": written under its root,
    then copied over with `cp`). The tool calls the role makes for it."""
    if when == "before":
        for rel, text in files.items():
            (ws / rel).write_text(text)
        return []
    calls = []
    for i, (rel, text) in enumerate(files.items()):
        calls += [write(f"src/a/plant{i}", text), shell(f"cp src/a/plant{i} {rel}")]
    return [{"tool_calls": calls}]


WHEN = ["role", "before"]


def assert_planted_guard(result: dict[str, Any], when: str, *, outside: list[str]) -> None:
    """What the audit says: the changes it was meant to see, and (when the role wrote it)
    the repository's configuration as a changed guard."""
    (rec,) = result["audits"]
    expected = [*outside, ".git/config"] if when == "role" else outside
    assert rec["outside_roots"] == expected, rec
    assert rec["passed"] is (not expected)


@pytest.mark.parametrize("when", WHEN)
def test_a_clean_filter_does_not_run_and_the_change_is_seen(tmp_path: Path, when: str) -> None:
    ws = workspace(tmp_path)
    filt = marker_script(tmp_path, "filter", "cat\n")
    files = {
        ".git/config": planted_config(
            ws, f'[filter "evil"]\n\tclean = {filt}\n\trequired = true\n'
        ),
        ".gitattributes": "* filter=evil\n",
    }
    script = [*plant(ws, when, files), {"tool_calls": [write("src/a/x.py", "x = 2\n")]}]
    result = run(tmp_path, ws, batch(script, ["src/a/"], shell={"sandbox": "off"}))
    assert not (tmp_path / "filter.marker").exists()
    # src/a/x.py changed, same size: seen by its content, with no filter; inside the roots.
    outside = [".gitattributes"] if when == "role" else []
    assert_planted_guard(result, when, outside=outside)
    git(ws, "status", "--porcelain")
    assert (tmp_path / "filter.marker").exists()  # the plant was live


@pytest.mark.parametrize("when", WHEN)
def test_an_fsmonitor_does_not_run(tmp_path: Path, when: str) -> None:
    ws = workspace(tmp_path)
    fsm = marker_script(tmp_path, "fsmonitor", "exit 1\n")
    files = {".git/config": planted_config(ws, f"[core]\n\tfsmonitor = {fsm}\n")}
    script = [*plant(ws, when, files), {"tool_calls": [shell("cp src/a/x.py src/b/y.py")]}]
    result = run(tmp_path, ws, batch(script, ["src/a/"], shell={"sandbox": "off"}))
    assert not (tmp_path / "fsmonitor.marker").exists()
    assert_planted_guard(result, when, outside=["src/b/y.py"])
    git(ws, "status", "--porcelain")
    assert (tmp_path / "fsmonitor.marker").exists()  # the plant was live


@pytest.mark.parametrize("when", WHEN)
def test_a_hooks_path_does_not_run(tmp_path: Path, when: str) -> None:
    """git status writes a refreshed index when it can, and runs post-index-change then."""
    ws = workspace(tmp_path)
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    marker_script(tmp_path, "hook").rename(hooks / "post-index-change")
    files = {".git/config": planted_config(ws, f"[core]\n\thooksPath = {hooks}\n")}
    # The same content again: only the stat data moves, which a refreshed index records.
    script = [*plant(ws, when, files), {"tool_calls": [write("src/a/x.py", "x = 1\n")]}]
    result = run(tmp_path, ws, batch(script, ["src/a/"], shell={"sandbox": "off"}))
    assert not (tmp_path / "hook.marker").exists()
    assert_planted_guard(result, when, outside=[])
    git(ws, "status", "--porcelain")
    assert (tmp_path / "hook.marker").exists()


def test_diff_drivers_do_not_run_when_head_moved(tmp_path: Path) -> None:
    """A role that moved HEAD (here by rewriting `.git/HEAD`) makes the audit diff two
    commits: by name only, with no external diff and no textconv."""
    ws = workspace(tmp_path)
    git(ws, "checkout", "-q", "-b", "side")
    (ws / "src/b/y.py").write_text("y = 3\n")
    git(ws, "commit", "-qam", "side")
    git(ws, "checkout", "-q", "-")
    ext, conv = marker_script(tmp_path, "external"), marker_script(tmp_path, "textconv", "cat $1\n")
    extra = f'[diff]\n\texternal = {ext}\n[diff "evil"]\n\ttextconv = {conv}\n\tcommand = {ext}\n'
    files = {
        ".git/config": planted_config(ws, extra),
        ".gitattributes": "* diff=evil\n",
        ".git/HEAD": "ref: refs/heads/side\n",
    }
    result = run(
        tmp_path, ws, batch(plant(ws, "role", files), ["src/a/"], shell={"sandbox": "off"})
    )
    assert (
        not (tmp_path / "external.marker").exists() and not (tmp_path / "textconv.marker").exists()
    )
    (rec,) = result["audits"]
    assert rec["outside_roots"] == [".gitattributes", "src/b/y.py", ".git/config", "HEAD"]
    git(ws, "diff", "master", "side")
    assert (tmp_path / "external.marker").exists()
    git(ws, "diff", "--no-ext-diff", "master", "side")
    assert (tmp_path / "textconv.marker").exists()


@pytest.mark.parametrize("when", WHEN)
def test_a_git_planted_on_path_is_not_the_audits(tmp_path: Path, when: str) -> None:
    """orkeon's PATH starts with the workspace's git-ignored `.venv/bin` (an activated
    virtual environment). The audit's git was found before any role ran, outside the
    workspace; the role (in the sandbox, `.venv/` among its roots) plants one there."""
    ws = workspace(tmp_path)
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    evil = marker_script(tmp_path, "git", f'exec {real} "$@"\n')
    venv_bin = ws / ".venv" / "bin"
    if when == "before":
        venv_bin.mkdir(parents=True)
        (venv_bin / "git").write_bytes(evil.read_bytes())
        (venv_bin / "git").chmod(0o755)
        script = []
    else:
        # Where the role's commands can read it: the host's /tmp is not in the sandbox.
        (ws / "tools").mkdir()
        (ws / "tools/git").write_bytes(evil.read_bytes())
        (ws / "tools/git").chmod(0o755)
        script = [
            {"tool_calls": [shell("mkdir -p .venv/bin"), shell("cp tools/git .venv/bin/git")]}
        ]
    script.append({"tool_calls": [write("src/a/x.py", "x = 2\n"), write("src/a/new.py", "")]})
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(batch(script, ["src/a/", ".venv/"])))
    env = {**environ(tmp_path), "ANTHROPIC_API_KEY": KEY}
    env["PATH"] = f"{venv_bin}{os.pathsep}{env['PATH']}"
    proc = orkeon("run", "dev-batches", "--inputs", f"@{inputs}", "--workspace", str(ws),
                  "--output", "json", "--progress", "none", cwd=tmp_path, env=env,
                  timeout=300)  # fmt: skip
    result = json.loads(proc.stdout)
    assert (venv_bin / "git").exists()
    marker = tmp_path / "git.marker"
    assert not marker.exists()
    (rec,) = result["audits"]
    assert (rec["passed"], result["status"]) == (True, "succeeded"), rec
    # The audit saw the role's two changes: a repair of the same role finds them again.
    assert result["roles"][0]["calls"] == len([c for t in script for c in t["tool_calls"]])
    subprocess.run(["git", "status"], cwd=ws, env=env, capture_output=True)
    assert marker.exists() and KEY in marker.read_text()  # first on that PATH: live
