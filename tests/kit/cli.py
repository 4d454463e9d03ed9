"""Helpers for the tests of `orkeon run pipeline` and the CI knobs: `orkeon` run in this
process through its entry point (`orkeon_run.__main__.main`) with a clean environment, a
scripted pipeline (analyst, writer, planner and the plan's roles), and hook scripts that
refuse a write once or always."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from orkeon_run.__main__ import main

from .steps import write

PLAN = {
    "title": "hello",
    "batches": [
        {
            "name": "b1",
            "roles": [{"name": "api", "roots": ["src/"], "task": "write src/hello.txt"}],
        },
        {"name": "b2", "roles": [{"name": "docs", "roots": ["docs/"], "task": "write docs/x.md"}]},
    ],
}


def pipeline_script(plan: dict[str, Any] = PLAN) -> dict[str, Any]:
    """Answers for every role of the pipeline: the analyst reports, the writer writes the
    spec, the planner writes `plan`, b1/api writes src/hello.txt, b2/docs docs/x.md."""
    return {
        "analyst": [{"text": "README.md is all there is."}],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "# Spec\nsay hello\n")]}],
        "planner": [{"tool_calls": [write(".orkeon/plan.json", json.dumps(plan))]}],
        "b1/api": [{"tool_calls": [write("src/hello.txt", "hello\n")]}],
        "b2/docs": [{"tool_calls": [write("docs/x.md", "# x\n")]}],
    }


def pipeline_doc(**more: Any) -> dict[str, Any]:
    return {
        "request": "say hello",
        "model": {"provider": "scripted", "script": pipeline_script()},
        "audit": {"test": ["test", "-f", "src/hello.txt"]},
        **more,
    }


def refusing_hook(tmp: Path, *, once: bool) -> tuple[str, Path]:
    """A pre-tool hook script (its command and path) that refuses a write of
    src/hello.txt: the first one only (`once`), or every one."""
    script = tmp / ("refuse-once.sh" if once else "refuse-always.sh")
    marker = tmp / "refused-once"
    check = f'[ ! -e "{marker}" ]' if once else "true"
    script.write_text(
        "#!/bin/sh\n"
        "# $1: the tool, $2: the path as the model wrote it\n"
        f'if [ "$2" = src/hello.txt ] && {check}; then\n'
        f'  : > "{marker}"\n'
        '  echo "not now: $2" >&2\n'
        "  exit 2\n"
        "fi\n"
        "exit 0\n"
    )
    script.chmod(0o755)
    return f"{script} {{tool}} {{path}}", script


def with_hook(doc: dict[str, Any], command: str, program: Path) -> dict[str, Any]:
    return {
        **doc,
        "hooks": [{"event": "pre-tool", "command": command}],
        "shell": {"extra_allowed_commands": [str(program)]},
    }


def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No ORKEON_* variable from the developer's shell; a config folder of the test's own
    (returned); the current directory is tmp_path."""
    for name in list(os.environ):
        if name.lower().startswith("orkeon") or name in ("GITHUB_ACTIONS", "NO_COLOR"):
            monkeypatch.delenv(name)
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(config))
    monkeypatch.chdir(tmp_path)
    return config


def orkeon(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`orkeon ARGV` in this process: exit code, stdout, stderr."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(
    capsys: pytest.CaptureFixture[str], step: str, ws: Path, *args: str, doc: Any = None
) -> tuple[int, dict[str, Any], str]:
    """`orkeon run STEP --workspace WS --output json [--inputs DOC] ARGS`: the exit code,
    the result document (printed on stdout) and stderr."""
    argv = ["run", step, "--workspace", str(ws), "--output", "json", "--progress", "none"]
    if doc is not None:
        argv += ["--inputs", json.dumps(doc)]
    code, out, err = orkeon(capsys, *argv, *args)
    assert out.count("\n") == 1, (code, out, err)
    return code, json.loads(out), err


def run_dir(ws: Path, result: dict[str, Any]) -> Path:
    return ws / ".orkeon" / "runs" / result["run_id"]
