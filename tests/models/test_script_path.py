"""A scripted model's `script` file that is not there (docs/inputs.md, "`"provider":
"scripted"`"): exit 2, one line naming `model.script` and the path as the inputs wrote
it, then where it was looked for; `@` (Claude Code's way to name a file) is not orkeon's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kit.process import orkeon
from kit.steps import make_workspace


def run_task(tmp: Path, script: str) -> subprocess.CompletedProcess[str]:
    ws = make_workspace(tmp, {"README.md": "# demo\n"})
    doc = {"request": "x", "model": {"provider": "scripted", "script": script}}
    return orkeon("run", "task", "--workspace", str(ws), "--inputs", json.dumps(doc), cwd=tmp)


def test_an_at_path_is_named_as_written_with_a_hint(tmp_path: Path) -> None:
    proc = run_task(tmp_path, "@/x.json")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"orkeon: model.script: no such file: @/x.json (looked for {tmp_path}/@/x.json); "
        "a script file is named by its path, without '@' (only @transcript:PATH takes one)\n"
    )


def test_an_absolute_path_is_named_once(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    proc = run_task(tmp_path, str(missing))
    assert (proc.returncode, proc.stderr) == (2, f"orkeon: model.script: no such file: {missing}\n")
