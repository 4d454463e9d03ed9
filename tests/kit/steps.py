"""Steps as `orkeon run` runs them: a real git workspace in tmp_path (the one way a test
makes a workspace), a step run through the runner, the inputs of the scripted model and
its calls, and readers for what the run wrote (events.jsonl, transcripts, state.json)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.run import runner
from orkeon_run.run.records import open_sealed

from . import git as run_git


def make_workspace(root: Path, files: dict[str, str], *, git: bool = True) -> Path:
    """`root/ws` (resolved) holding `files`, committed to a new git repository (`git`)."""
    ws = root / "ws"
    ws.mkdir()
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if git:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
            run_git(ws, *args)
    return ws.resolve()


def environ(tmp: Path, **more: str) -> dict[str, str]:
    """orkeon's environment: no user settings, nothing from the developer's shell config
    (no ORKEON_* of this process, the config folder tmp/config); then `more` over it."""
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("orkeon")}
    env["ORKEON_CONFIG_DIR"] = str(tmp / "config")
    return {**env, **more}


def run_step(
    step: str,
    doc: dict[str, Any] | None,
    ws: Path,
    *,
    run_dir: Path | None = None,
    resume_dir: Path | None = None,
) -> dict[str, Any]:
    """Run one step as `orkeon run` does; the result document. The current directory is
    the workspace's parent, so nothing can fall back on the checkout."""
    with contextlib.chdir(ws.parent):
        go = functools.partial(
            runner.run,
            step,
            doc,
            workspace=str(ws),
            run_dir=str(run_dir) if run_dir else None,
            resume_dir=str(resume_dir) if resume_dir else None,
            stream=None,
            environ=environ(ws.parent),
        )
        return anyio.run(go)


def scripted(script: dict[str, Any], **more: Any) -> dict[str, Any]:
    """Inputs whose model is the scripted one, answering each role from `script`."""
    return {"model": {"provider": "scripted", "script": script}, **more}


def call(tool: str, **input: Any) -> dict[str, Any]:
    """One tool call of a scripted answer."""
    return {"tool": tool, "input": input}


def write(path: str, content: str) -> dict[str, Any]:
    return call("file_write", file_path=path, content=content)


def shell(command: str) -> dict[str, Any]:
    return call("shell", command=command)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events(run_dir: Path, type: str | None = None) -> list[dict[str, Any]]:
    found = read_jsonl(run_dir / "events.jsonl")
    return [e for e in found if type is None or e["type"] == type]


def calls(run_dir: Path, role: str) -> list[dict[str, Any]]:
    return [e for e in events(run_dir, "tool.call") if e["role"] == role]


def user_messages(run_dir: Path, role: str) -> list[str]:
    lines = read_jsonl(run_dir / "transcripts" / f"{role}.jsonl")
    return [m["content"] for m in lines if m.get("role") == "user"]


def state(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "state.json").read_text())


def rewrite_record(ws: Path, run_dir: Path, name: str, doc: Any) -> None:
    """Rewrite RUN_DIR/NAME as orkeon itself writes it, sealed (run/records.py): how a test
    stands for a run killed at the point that record describes. A record changed any other
    way is refused by --resume and tasks-repair."""
    records, _ = open_sealed(run_dir, "test", environ(ws.parent))
    records.write(name, doc)


def role_status(result: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["status"] for r in result["roles"]}
