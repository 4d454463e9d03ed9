"""Real run directories for the report tests, made once per test session (per xdist
worker) through `orkeon_run.run.runner.run` with the scripted model (kit/steps.py).

- `mixed`: dev-batches, failed (exit 1). Role `b1/a` makes calls that run, one whose
  post-tool hook fails, and calls refused by a pre-tool hook, the gate, the roots and as
  invalid; role `b1/b` reads a hostile README. The audit's test fails.
- `stopped`: dev-batches with settings-shape hooks, a price and token usage: `b1/a` is
  stopped by a PreToolUse hook (`continue: false`), `b1/b` succeeds, its write getting
  PostToolUse feedback (exit 2); a Stop hook fails.
- `killed`: dev-batches killed with SIGKILL while a pre-tool hook holds `b1/a`'s second
  call (`b1/b` waits its turn: concurrency 1): no result.json, no `result` event.

Hostile text: `HOSTILE` is in a file name the model wrote (refused by the roots), in a
hook's output and in the README the model read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import GIT_ENV, ORKEON
from .steps import environ, make_workspace, run_step, scripted, write

HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><script>document.body.setAttribute('data-pwned','1')</script> `|` @octocat #1 </details> [x](https://example.invalid/t.png) ![t](https://example.invalid/t.png)"
HOSTILE_NAME = "src/b/<b>x</b>|@octocat`.py"
FILES = {"README.md": f"# app\n{HOSTILE}\n", "src/a/__init__.py": "", "src/b/__init__.py": ""}

HOOK = r"""#!/bin/sh
# pre-tool: refuse generated/; post-tool: fail on lint.py (both print hostile text)
here=$(dirname "$0")
case "$2" in
  *generated*) printf 'generated is off limits: %s\n' "$(cat "$here/hostile.txt")" >&2; exit 2 ;;
esac
case "$1 $2" in
  post*lint*) printf 'lint failed: %s\n' "$(cat "$here/hostile.txt")" >&2; exit 1 ;;
esac
exit 0
"""


@dataclass
class Runs:
    ws: Path
    mixed: Path
    stopped: Path
    killed: Path
    mixed_result: dict[str, Any]
    stopped_result: dict[str, Any]


def plan(*roles: tuple[str, list[str]]) -> dict[str, Any]:
    return {
        "title": "t",
        "batches": [
            {"name": "b1", "roles": [{"name": n, "roots": r, "task": f"do {n}"} for n, r in roles]}
        ],
    }


def hook_script(root: Path) -> Path:
    (root / "hostile.txt").write_text(HOSTILE)
    path = root / "hook.sh"
    path.write_text(HOOK)
    path.chmod(0o755)
    return path


def mixed_doc(hook: Path) -> dict[str, Any]:
    script = {
        "b1/a": [
            {"tool_calls": [write("src/a/ok.py", "x = 1\n"), write("src/a/lint.py", "y = 2\n")]},
            {"tool_calls": [write("src/a/generated/t.py", ""), write("secret/key.txt", "k")]},
            {"tool_calls": [write(HOSTILE_NAME, "z"), {"tool": "no_such_tool", "input": {}}]},
            {"text": "done"},
        ],
        "b1/b": [
            {"tool_calls": [{"tool": "file_read", "input": {"file_path": "README.md"}}]},
            {"text": "read"},
        ],
    }
    return scripted(
        script,
        plan=plan(("a", ["src/a/"]), ("b", ["src/b/"])),
        gate={"deny": ["Write(secret/**)"]},
        hooks=[
            {"event": "pre-tool", "command": f"{hook} pre {{path}}"},
            {"event": "post-tool", "command": f"{hook} post {{path}}"},
        ],
        shell={"extra_allowed_commands": [str(hook)]},
        audit={"test": ["test", "-f", "src/a/missing.py"]},
    )


def stopped_doc() -> dict[str, Any]:
    usage = {"input_tokens": 1200, "output_tokens": 300}
    script = {
        "b1/a": [{"tool_calls": [write("src/a/stop.py", "")], "usage": usage}, {"text": "never"}],
        "b1/b": [
            {"tool_calls": [write("src/b/ok.py", "")], "usage": usage},
            {"text": "ok", "usage": usage},
        ],
    }
    stop = '{"continue": false, "stopReason": "a stops here"}'
    doc = scripted(
        script,
        plan=plan(("a", ["src/a/"]), ("b", ["src/b/"])),
        hooks={
            "PreToolUse": [{"matcher": "file_write", "hooks": [
                {"type": "command", "command": f"case \"$(cat)\" in *stop.py*) echo '{stop}';; esac"}]}],
            "PostToolUse": [{"matcher": "file_write", "hooks": [
                {"type": "command", "command": "echo use tabs >&2; exit 2"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "echo the stop hook broke >&2; exit 1"}]}],
        },
        budget={"seconds": 600, "usd": 5.0},
    )  # fmt: skip
    doc["model"]["price"] = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    return doc


def killed_run(tmp: Path, ws: Path, hook: Path) -> Path:
    """Start `orkeon run` in a process, wait until its hook holds the second call, kill it."""
    marker = tmp / "holding"
    holder = tmp / "hold.sh"
    holder.write_text(
        f'#!/bin/sh\ncase "$1" in *second*) echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 60;; esac\n'
    )
    holder.chmod(0o755)
    script = {
        "b1/a": [
            {"tool_calls": [write("src/a/first.py", "1"), write("src/b/nope.py", "")]},
            {"tool_calls": [write("src/a/second.py", "2")]},
            {"text": "done"},
        ]
    }
    doc = scripted(
        script,
        plan=plan(("a", ["src/a/"]), ("b", ["src/b/"])),
        concurrency=1,  # b1/b waits for b1/a, which never ends: it never starts
        hooks=[{"event": "pre-tool", "command": f"{holder} {{path}}"}],
        shell={"extra_allowed_commands": [str(holder)]},
    )
    rd = tmp / "killed"
    env = {**environ(tmp), **GIT_ENV, "ORKEON_LOG_LEVEL": "error"}
    proc = subprocess.Popen(
        [*ORKEON, "run", "dev-batches", "--inputs", json.dumps(doc),
         "--workspace", str(ws), "--run-dir", str(rd), "--output", "json"],
        cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        # Awaited without a deadline: the run ending first fails at once, and the test's
        # time-out is the hang guard.
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if marker.exists():  # the hook runs in a process group of its own
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(marker.read_text()), signal.SIGKILL)
        if proc.stderr:
            proc.stderr.close()
    return rd


_MADE: list[Runs] = []


def make_runs(factory: pytest.TempPathFactory) -> Runs:
    """The runs, made once per process (an xdist worker) for every module that asks."""
    if not _MADE:
        tmp = factory.mktemp("runs")
        hook = hook_script(tmp)
        ws = make_workspace(tmp, FILES)
        mixed, stopped = tmp / "mixed", tmp / "stopped"
        mixed_result = run_step("dev-batches", mixed_doc(hook), ws, run_dir=mixed)
        stopped_result = run_step("dev-batches", stopped_doc(), ws, run_dir=stopped)
        killed = killed_run(tmp, ws, hook)
        _MADE.append(Runs(ws, mixed, stopped, killed, mixed_result, stopped_result))
    return _MADE[0]


def read_outputs(text: str) -> dict[str, str]:
    """`$GITHUB_OUTPUT` as GitHub's runner reads it: `NAME=VALUE` or `NAME<<DELIM` … `DELIM`."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            while lines[i] != delimiter:
                body.append(lines[i])
                i += 1
            i += 1
            values[name] = "\n".join(body)
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values


# Headless Chromium, where installed: the HTML report opened as a browser shows it.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


def _chromium(page: Path, tmp: Path, size: str, *how: str) -> subprocess.CompletedProcess[str]:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium to run this test)")
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}", f"--window-size={size}", *how,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def dump_dom(page: Path, tmp: Path, fragment: str = "", size: str = "1366,768") -> str:
    """The page's DOM after its scripts ran."""
    return _chromium(page, tmp, size, "--dump-dom", page.as_uri() + fragment).stdout


def screenshot(page: Path, tmp: Path, out: Path, size: str) -> None:
    _chromium(page, tmp, size, f"--screenshot={out}", page.as_uri())


# Measures the page as the browser laid it out, into attributes of <body> (dump_dom reads
# them): how far it scrolls sideways, the timeline's marks, the chart's height.
PROBE = """
(function () {
  var b = document.body, marks = document.querySelectorAll('.track .mark');
  var thin = 0;
  marks.forEach(function (m) { if (m.getBoundingClientRect().width < 3) { thin += 1; } });
  b.setAttribute('data-overflow', String(document.documentElement.scrollWidth - window.innerWidth));
  b.setAttribute('data-marks', String(marks.length));
  b.setAttribute('data-thin', String(thin));
  b.setAttribute('data-chart', String(Math.round(document.querySelector('svg.chart').getBoundingClientRect().height)));
})();
"""


def with_probe(page: str) -> str:
    """The report's HTML with PROBE added, its hash allowed by the page's policy."""
    digest = base64.b64encode(hashlib.sha256(PROBE.encode()).digest()).decode()
    page = page.replace("script-src &#x27;", f"script-src &#x27;sha256-{digest}&#x27; &#x27;", 1)
    return page.replace("</body>", f"<script>{PROBE}</script></body>", 1)


def probe(dom: str) -> dict[str, str]:
    return dict(re.findall(r'data-(overflow|marks|thin|chart|ready)="([^"]*)"', dom))
