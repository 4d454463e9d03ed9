"""Helpers for the step tests (tests/run/steps/): a real git workspace in tmp_path, a
step run through the runner (the code behind `orkeon run`), and readers for what the run
wrote (events.jsonl, transcripts, state.json)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from orkeon_run.run import runner
from orkeon_run.run.records import open_sealed

DATA = Path(__file__).parent / "data" / "steps"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def make_workspace(root: Path, files: dict[str, str], *, git: bool = True) -> Path:
    ws = root / "ws"
    ws.mkdir()
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if git:
        env = {**os.environ, **GIT_ENV}
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
            subprocess.run(["git", *args], cwd=ws, check=True, env=env, capture_output=True)
    return ws.resolve()


def environ(tmp: Path) -> dict[str, str]:
    """orkeon's environment: no user settings, nothing from the developer's shell config."""
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("orkeon")}
    env["ORKEON_CONFIG_DIR"] = str(tmp / "config")
    return env


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
        return runner.run(
            step,
            doc,
            workspace=str(ws),
            run_dir=str(run_dir) if run_dir else None,
            resume_dir=str(resume_dir) if resume_dir else None,
            stream=None,
            environ=environ(ws.parent),
        )


def scripted(script: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"model": {"provider": "scripted", "script": script}, **more}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "file_write", "input": {"file_path": path, "content": content}}


def shell(command: str) -> dict[str, Any]:
    return {"tool": "shell", "input": {"command": command}}


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
