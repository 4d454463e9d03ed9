"""A native guard cannot be dodged by the path's spelling (docs/hooks.md, "Writing a
guard"): `{path}` is `-` for a path a command line would have to quote, so a hook also gets
the call in its environment (ORKEON_HOOK_PATH exactly as the model wrote it, ORKEON_HOOK_TOOL,
ORKEON_HOOK_EVENT), and the demo's guard refuses a writing call whose `{path}` is `-`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kit import ROOT, git
from kit.steps import calls, make_workspace, run_step, scripted, shell, write

DEMO = ROOT / "examples" / "demo" / "project"

DUMP = """\
import json, os, sys
with open(sys.argv[1], "a") as f:
    keys = ("ORKEON_HOOK_TOOL", "ORKEON_HOOK_EVENT", "ORKEON_HOOK_PATH")
    f.write(json.dumps({"argv": sys.argv[2:], **{k: os.environ.get(k) for k in keys}}) + "\\n")
"""

TRICKY = ["src/with space.py", "src/$HOME.py", "src/{a}.py", 'src/"q".py', "src/it's.py"]


def test_native_hooks_get_the_full_path_in_their_environment(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"src/__init__.py": ""})
    dump, log = tmp_path / "dump.py", tmp_path / "hook.log"
    dump.write_text(DUMP)
    hooks = [
        {"event": "pre-tool", "command": f"python3 {dump} {log} {{tool}} {{path}}"},
        {"event": "post-tool", "command": f"python3 {dump} {log} {{tool}} {{path}}"},
    ]
    plan = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}
    made = [write(p, "x") for p in [*TRICKY, "src/plain.py"]] + [shell("ls src")]
    doc = scripted({"b1/a": [{"tool_calls": made}, {"text": "done"}]}, plan=plan,
                   hooks=hooks, shell={"allow_interpreters": True})  # fmt: skip
    result = run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    assert result["status"] == "succeeded", result["error"]
    got = [json.loads(line) for line in log.read_text().splitlines()]
    want: list[dict[str, Any]] = []
    for path, word, tool in [*((p, "-", "file_write") for p in TRICKY),
                             ("src/plain.py", "src/plain.py", "file_write"), ("", "-", "shell")]:  # fmt: skip
        for event in ("pre-tool", "post-tool"):
            want.append({"argv": [tool, word], "ORKEON_HOOK_TOOL": tool,
                         "ORKEON_HOOK_EVENT": event, "ORKEON_HOOK_PATH": path})  # fmt: skip
    assert got == want


def demo_workspace(tmp_path: Path) -> Path:
    """The demo's project as examples/demo/run.sh makes it: a fresh git repository."""
    ws = tmp_path / "demo"
    shutil.copytree(DEMO, ws)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "demo"]):
        git(ws, *args)
    return ws.resolve()


def test_the_demo_guard_refuses_a_generated_file_however_its_path_is_spelled(
    tmp_path: Path,
) -> None:
    """The issue: `calc/generated/with space.py` got past the demo's guard (`{path}` was
    `-`, which does not start with calc/generated/). Through the demo's own hook command."""
    ws = demo_workspace(tmp_path)
    (ws / "gen").symlink_to("calc/generated")
    inputs = json.loads((DEMO.parent / "inputs" / "dev-batches.json").read_text())
    attempts = [
        "calc/generated/with space.py",
        "calc/generated/$x.py",
        "calc/generated/{a}.py",
        "calc/../calc/generated/table.py",
        "./calc//generated/table.py",
        "gen/table.py",
        "calc/generated",
    ]
    plan = {"batches": [{"name": "b1", "roles": [{"name": "core", "roots": ["calc/"],
                                                    "task": "t"}]}]}  # fmt: skip
    script = {"b1/core": [{"tool_calls": [*(write(p, "x = 1\n") for p in attempts),
                                          write("calc/fine.py", "y = 2\n"),
                                          write("calc/also fine.py", "z = 3\n")]},
                          {"text": "done"}]}  # fmt: skip
    doc = {**inputs, "model": {"provider": "scripted", "script": script}, "plan": plan,
           "audit": {}}  # fmt: skip
    rd = tmp_path / "run"
    run_step("dev-batches", doc, ws, run_dir=rd)
    got = calls(rd, "b1/core")
    guard = "python3 .orkeon/hooks/pre_tool.py file_write"
    refused = [c for c in got if c["refused_by"] == "hook"]
    assert [c["input"]["file_path"] for c in refused] == [*attempts, "calc/also fine.py"]
    for call in refused[:3]:
        assert call["result"] == (
            f"[pre-tool hook #1 ({guard} -) exited 2: refused: the path "
            f"{call['input']['file_path']!r} is not shown to this guard as {{path}}; write to "
            "a path of letters, digits and ._/@+=,:- only]"
        )
    for call in refused[3:-1]:
        assert call["result"].endswith("calc/generated/ is generated, not edited by hand]")
    assert (ws / "calc/generated/table.py").read_text().startswith("# Generated")
    assert sorted(p.name for p in (ws / "calc/generated").iterdir()) == [
        "__init__.py",
        "table.py",
    ]
    assert (ws / "calc/fine.py").read_text() == "y = 2\n"
