"""The collector during start-up (orkeon_run/startup.py; docs/performance.md, "Start-up,
after the third round's merges"): the console script pauses the cyclic garbage collector
while the command line and the command load; the command's work runs with it back on, what
start-up made frozen; a program that calls `main()` keeps its collector as it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kit.steps import environ, make_workspace, scripted

VALIDATE = ["validate", "--inputs", '{"budget": {"seconds": 60}}', "--workspace"]


def python(code: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp)],
        capture_output=True, text=True, env=environ(tmp), cwd=tmp,
    )  # fmt: skip


def test_no_collection_scans_the_start_up(tmp_path: Path) -> None:
    """The console script's scripted `orkeon run` of 30 calls: the process collects (its
    work makes garbage), and every collection comes after the start-up's objects were
    frozen (each one says how many were)."""
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    reads = [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]}] * 30
    doc = scripted({"b1/dev": [*reads, {"text": "done"}]}, plan=plan, budget={"seconds": 600})
    argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--inputs"]
    code = (
        "import gc, sys; from orkeon_run import __main__ as m\n"
        f"sys.argv = ['orkeon', *{argv!r}, {json.dumps(doc)!r}]\n"
        # From an empty young generation: the console script's own first lines (importing
        # startup.py, before its pause) must not meet this test's leftover allocations.
        "gc.collect()\n"
        "gc.callbacks.append(lambda p, i: p == 'start' and "
        "sys.stderr.write(f'collection {gc.get_freeze_count()}\\n'))\n"
        "m.entry()\n"
    )
    proc = python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    frozen = [int(line.split()[1]) for line in lines if line.startswith("collection ")]
    assert frozen and all(n > 10_000 for n in frozen), frozen[:5]


def test_the_command_runs_with_the_collector_on(tmp_path: Path) -> None:
    """After the pause, the command's work (a run of any length) collects as before."""
    code = (
        "import gc, json, sys; from orkeon_run.startup import pause; pause()\n"
        "from orkeon_run.__main__ import main\n"
        f"rc = main([*{VALIDATE!r}, sys.argv[1]])\n"
        "print(json.dumps([rc, gc.isenabled(), gc.get_freeze_count()]))\n"
    )
    proc = python(code, tmp_path)
    rc, enabled, frozen = json.loads(proc.stdout.splitlines()[-1])
    assert (rc, enabled) == (0, True) and frozen > 10_000, proc.stderr


def test_a_program_calling_main_keeps_its_collector(tmp_path: Path) -> None:
    """`main()` embedded (the tests' way): nothing paused, nothing frozen."""
    code = (
        "import gc, json, sys; from orkeon_run.__main__ import main\n"
        f"rc = main([*{VALIDATE!r}, sys.argv[1]])\n"
        "print(json.dumps([rc, gc.isenabled(), gc.get_freeze_count()]))\n"
    )
    proc = python(code, tmp_path)
    assert json.loads(proc.stdout.splitlines()[-1]) == [0, True, 0], proc.stderr


def test_the_console_script_waits_for_what_it_kept_up(tmp_path: Path) -> None:
    """The console script leaves with `os._exit`, without `atexit` (orkeon_run/startup.py):
    the hooks' veil and the audit's kept-up sandbox, each a bubblewrap orkeon started, are
    still ended and waited for before it exits, not left to their parent-death signal. A
    check registered before them runs after them (last registered, first run) and finds
    each one's process reaped (the veil, and any sandbox still up then)."""
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": "x = 1\n"})
    plan = {"batches": [{"name": "b1", "roles": [{"name": "dev", "roots": ["src/"], "task": "t"}]}]}
    hook = {"type": "command", "command": "true"}
    doc = scripted(
        {"b1/dev": [{"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]},
                    {"text": "done"}]},
        plan=plan, hooks={"PreToolUse": [{"matcher": "*", "hooks": [hook]}]},
    )  # fmt: skip
    argv = ["run", "dev-batches", "--workspace", str(ws), "--output", "json", "--inputs"]
    code = (
        "import sys; from orkeon_run import startup\n"
        "kept = []\n"
        "startup.at_leave(lambda: print('reaped', [p.poll() is not None for p in kept], flush=True))\n"
        "from orkeon_run.tools.sandbox import session, veil\n"
        "startup.at_leave(lambda: kept.extend([*(s.popen for s in session._sessions.values()),"
        " *(v.popen for v in veil._kept)]))\n"
        "from orkeon_run import __main__ as m\n"
        f"sys.argv = ['orkeon', *{argv!r}, {json.dumps(doc)!r}]\n"
        "m.entry()\n"
    )
    proc = python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    reaped = [line for line in proc.stdout.splitlines() if line.startswith("reaped ")]
    assert len(reaped) == 1 and reaped[0].startswith("reaped [True"), (reaped, proc.stderr)
    assert "False" not in reaped[0], reaped
