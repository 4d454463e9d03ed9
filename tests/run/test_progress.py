"""`orkeon run --progress` (docs/output.md, "Progress"): plain lines for CI logs, a live
view on a terminal (a real pseudo-terminal), NO_COLOR and FORCE_COLOR, the heartbeat, and
stdout left to the result."""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kit.process import orkeon
from kit.steps import environ, make_workspace

from orkeon_run.run import progress
from orkeon_run.run.progress.plain import PlainProgress
from orkeon_run.run.progress.tracker import Tracker

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m")  # a foreground colour

READ = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
PLAN = {"batches": [
    {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"},
                             {"name": "tests", "roots": ["tests/"], "task": "t"}]},
    {"name": "b2", "roles": [{"name": "docs", "roots": ["docs/"], "task": "t"}]},
]}  # fmt: skip
SCRIPT = {
    "b1/api": [
        {"text": "Reading first.", "tool_calls": [READ, {"tool": "file_write",
         "input": {"file_path": "docs/x.md", "content": "x"}}]},
        {"tool_calls": [{"tool": "shell", "input": {"command": "ls nope"}},
                        {"tool": "file_write", "input": {"file_path": "src/secrets/k", "content": "k"}}]},
    ],
    "b1/tests": [{"tool_calls": [{"tool": "nope_tool", "input": {}}]}],
    "b2/docs": [{"tool_calls": [{"tool": "file_write", "input": {"file_path": "docs/y.md", "content": "y"}}]}],
}  # fmt: skip
# Batch b1 passes its audit; b2 writes docs/y.md, which its audit's test refuses.
INPUTS = {
    "model": {"provider": "scripted", "script": SCRIPT},
    "plan": PLAN,
    "hooks": [{"event": "post-tool", "command": "false"}],
    "gate": {"deny": ["Write(src/secrets/**)"]},
    "audit": {"test": ["test", "!", "-e", "docs/y.md"]},
    "budget": {"seconds": 600, "turns": 8},
}


def workspace(root: Path) -> Path:
    """A fresh git workspace under `root` (a run changes it: one per run)."""
    root.mkdir(parents=True, exist_ok=True)
    return make_workspace(root, {"src/a.py": "a = 1\n", "docs/README.md": "# d\n"})


def orkeon_run(
    tmp: Path, ws: Path, doc: dict[str, Any], *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    (tmp / "inputs.json").write_text(json.dumps(doc))
    return orkeon("run", "dev-batches", "--inputs", f"@{tmp / 'inputs.json'}",
                  "--workspace", str(ws), *args, cwd=tmp,
                  env=environ(tmp, **{"ORKEON_LOG_LEVEL": "warning", **env}))  # fmt: skip


def plain_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("{")]


# --- plain -------------------------------------------------------------------------------


def test_plain_says_each_notable_event_in_one_line_with_who_first(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    proc = orkeon_run(tmp_path, ws, INPUTS, "--progress", "plain")
    assert proc.returncode == 1
    result = json.loads(proc.stdout)  # stdout: the result, nothing else
    lines = plain_lines(proc.stderr)
    expected = [
        f"dev-batches: started run {result['run_id']} (budget: 10 min 00 s, 8 turns)",
        "b1: batch started: b1/api, b1/tests",
        "b1/api: started",
        "b1/tests: started",
        "b1/tests: #1 nope_tool: refused (invalid call): error: there is no tool named 'nope_tool'",
        "b1/api: #1 hook post-tool #1 (false) exited 1",
        "b1/api: #2 file_write docs/x.md: refused by roots: [refused: docs/x.md is outside "
        "this role's roots (src/)]",
        "b1/api: #3 hook post-tool #1 (false) exited 1",
        "b1/api: #4 file_write src/secrets/k: refused by gate: [refused by the gate: "
        "Write(src/secrets/**)]",
        "budget: 50 % of the turn budget used (4 of 8 turns)",
        "b1: audit passed",
        "b1: batch passed",
        "b2: batch started: b2/docs",
        "b2/docs: #1 hook post-tool #1 (false) exited 1",
        "budget: 80 % of the turn budget used (7 of 8 turns)",
        "b2: audit FAILED: [test ! -e docs/y.md exited 1]",
        "b2: batch failed",
    ]
    for line in expected:
        assert line in lines, (line, lines)
    said = "\n".join(lines)
    assert re.search(r"^b1/api: #1 file_read src/a\.py: ran \(\d+\.\d+ s\)$", said, re.M)
    assert re.search(r"^b1/api: #3 shell ls nope: ran \(\d+\.\d+ s\)$", said, re.M)
    assert re.search(r"^b1/api: succeeded: 3 turns, 4 calls, 2 refused, \d", said, re.M)
    assert lines[-1].startswith("dev-batches: failed (exit 1) in ")
    assert lines[-1].endswith(": 3 roles, 6 calls, 3 refused, $0.0000; the audit of batch b2 "
                              "failed: test ! -e docs/y.md")  # fmt: skip
    # Greppable: a role's story is the lines starting with its name, in order.
    api = [line for line in lines if line.startswith("b1/api: ")]
    assert api[0] == "b1/api: started" and api[-1].startswith("b1/api: succeeded")
    numbers = re.findall(r"^b1/api: #(\d) \w+ .*?: (?:ran|refused)", said, re.M)
    assert [int(n) for n in numbers] == [1, 2, 3, 4]
    assert not [line for line in lines if line.startswith("::")]  # not under GitHub Actions


def test_under_github_actions_each_batch_is_a_group(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    proc = orkeon_run(tmp_path, ws, INPUTS, "--progress", "plain", GITHUB_ACTIONS="true")
    lines = plain_lines(proc.stderr)
    opened = [i for i, line in enumerate(lines) if line.startswith("::group::")]
    closed = [i for i, line in enumerate(lines) if line == "::endgroup::"]
    assert [lines[i] for i in opened] == [
        "::group::b1: batch started: b1/api, b1/tests",
        "::group::b2: batch started: b2/docs",
    ]
    assert len(closed) == 2 and opened[0] < closed[0] < opened[1] < closed[1]
    first = lines[opened[0] + 1 : closed[0]]
    assert first and all(line.startswith(("b1/api: ", "b1/tests: ", "budget: ")) for line in first)
    # The audit and the batch's outcome follow its block: seen when it is folded.
    # b1's roles changed no file: a warning (docs/output.md, "Audits").
    assert lines[closed[0] + 1 : closed[0] + 4] == [
        "b1: audit passed",
        "b1: warning: no role changed any file",
        "b1: batch passed",
    ]
    assert lines[closed[1] + 1] == "b2: audit FAILED: [test ! -e docs/y.md exited 1]"


def test_the_budget_marks_and_a_spent_budget(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    shell = {"tool": "shell", "input": {"command": "ls nope"}}
    doc = {"model": {"provider": "scripted", "script": {"b1/api": [{"tool_calls": [shell]}] * 4}},
           "plan": plan, "budget": {"seconds": 600, "turns": 2}}  # fmt: skip
    proc = orkeon_run(tmp_path, ws, doc, "--progress", "plain")
    assert proc.returncode == 3
    lines = plain_lines(proc.stderr)
    marks = [line for line in lines if line.startswith("budget: ")]
    assert marks == [
        "budget: 50 % of the turn budget used (1 of 2 turns)",
        "budget: the turn budget is spent (2 of 2 turns)",
    ]
    # Without a hook adding lines, a shell call's result keeps its exit code.
    assert re.search(r"^b1/api: #1 shell ls nope: ran, exit 2 \(", "\n".join(lines), re.M)
    assert [line for line in lines if line.startswith("b1/api: budget_exhausted: 2 turns, 2 calls")]
    assert lines[-1].startswith("dev-batches: budget_exhausted (exit 3) in ")


def test_a_settings_hook_that_fails_outside_a_call_is_a_line(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    plan = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
    stop = {"type": "command", "command": "echo 'lint is unhappy' >&2; exit 1"}
    doc = {"model": {"provider": "scripted", "script": {"b1/api": [{"text": "done"}]}},
           "plan": plan, "hooks": {"Stop": [{"hooks": [stop]}]}}  # fmt: skip
    proc = orkeon_run(tmp_path, ws, doc, "--progress", "plain")
    assert proc.returncode == 0, proc.stderr
    assert (
        "b1/api: hook Stop (echo 'lint is unhappy' >&2; exit 1) exited 1: lint is unhappy"
        in plain_lines(proc.stderr)
    )


@pytest.mark.slow
def test_none_shows_nothing_and_a_bad_mode_is_an_input_error(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    quiet = orkeon_run(tmp_path, ws, INPUTS, "--progress", "none")
    assert quiet.returncode == 1 and quiet.stderr == ""
    by_env = orkeon_run(tmp_path, ws, INPUTS, ORKEON_PROGRESS="none")
    assert by_env.returncode == 1 and by_env.stderr == ""
    # The flag wins over the variable.
    flagged = orkeon_run(tmp_path, ws, INPUTS, "--progress", "plain", ORKEON_PROGRESS="none")
    assert "b1/api: started" in plain_lines(flagged.stderr)
    bad = orkeon_run(tmp_path, ws, INPUTS, ORKEON_PROGRESS="fancy")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == "orkeon: ORKEON_PROGRESS: must be auto, live, plain or none, not 'fancy'\n"
    flag = orkeon_run(tmp_path, ws, INPUTS, "--progress", "fancy")
    assert flag.returncode == 2 and flag.stderr.count("\n") == 1 and "fancy" in flag.stderr


def test_plain_lines_are_sanitized_and_said_once(tmp_path: Path) -> None:
    """Model-written text (a tool name, a path) cannot move the cursor, colour the terminal
    or start a line of its own (GitHub reads `::…` at a line's start as a command)."""
    out = Capture()
    view = PlainProgress(out, github=True, color=False)
    view({"type": "run.start", "ts": 1.0, "step": "dev-batches", "run_id": "r", "budget": {}})
    view({"type": "role.start", "ts": 1.0, "step": "dev-batches", "batch": "b1", "role": "b1/a"})
    call = {"type": "tool.call", "ts": 2.0, "step": "dev-batches", "batch": "b1", "role": "b1/a",
            "hooks": [], "tool_seconds": 0.0, "hook_seconds": 0.0}  # fmt: skip
    view({**call, "seq": 1, "tool": "x\n::error::pwned", "input": {}, "outcome": "refused",
          "refused_by": None, "result": "error: no\n::warning::x"})  # fmt: skip
    view({**call, "seq": 2, "tool": "file_read", "input": {"file_path": "a\x1b[2Jb"},
          "outcome": "ran", "refused_by": None, "result": "x"})  # fmt: skip
    view({"type": "compact", "ts": 3.0, "step": "dev-batches", "batch": "b1", "role": "b1/a",
          "trigger": "auto", "messages_compacted": 4, "messages_removed": 2, "calls_removed": 1,
          "chars_dropped": 9000, "tokens_before": 9, "tokens_after": 5})  # fmt: skip
    view({"type": "plan.invalid", "ts": 4.0, "step": "dev-plan", "attempt": 2,
          "problems": ["plan.batches: Field required", "plan.x: extra"]})  # fmt: skip
    view({"type": "repair.start", "ts": 5.0, "step": "tasks-repair", "run": "/r/1", "role": "b1/a"})
    view({"type": "batch.skipped", "ts": 6.0, "step": "dev-batches", "batch": "b0",
          "reason": "passed earlier"})  # fmt: skip
    view.close()
    assert out.lines() == [
        "dev-batches: started run r",
        "b1/a: started",
        "b1/a: #1 x\\n::error::pwned: refused (invalid call): error: no",
        "b1/a: #2 file_read a\\x1b[2Jb: ran (0.00 s)",
        "b1/a: conversation compacted (4 messages shortened, 2 removed)",
        "planner: the plan is not valid (check 2): plan.batches: Field required (and 1 more)",
        "b1/a: repairing, from run /r/1",
        "b0: batch skipped (passed earlier)",
    ]
    assert "\x1b" not in out.text()


# --- the heartbeat -------------------------------------------------------------------------


class Capture:
    """A stream the view writes to; lines can be awaited."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            self._parts.append(text)
            self._changed.notify_all()
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        with self._changed:
            return "".join(self._parts)

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def await_line(self, pattern: str, timeout: float = 60.0) -> str:
        # Awaits the line; `timeout` is a hang guard only (quiet: under 2 s, so 30x).
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self._changed:
            while True:
                for line in "".join(self._parts).splitlines():
                    if regex.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line matching {pattern!r} in {self._parts!r}")
                self._changed.wait(left)


def test_a_heartbeat_while_the_model_or_a_call_takes_long(tmp_path: Path) -> None:
    """A timer, not a busy loop: lines come while nothing else happens. The interval is
    0.3 s here instead of a minute; the test awaits the lines."""
    out = Capture()
    view = PlainProgress(out, interval=0.3, flush=0.01, github=False, color=False)
    base = {"step": "dev-batches", "batch": "b1", "role": "b1/api"}
    view({"type": "run.start", "ts": time.time(), "step": "dev-batches", "run_id": "r"})
    view({"type": "role.start", "ts": time.time(), **base})
    waiting = out.await_line(r"^b1/api: waiting for the model's answer for \d+\.\d+ s \(turn 1\)$")
    assert float(re.findall(r"([\d.]+) s", waiting)[0]) >= 0.3
    view({"type": "model.turn", "ts": time.time(), **base, "turn": 1, "tokens_in": 0,
          "tokens_out": 0, "usd": 0.0, "tool_calls": 1, "seconds": 0.5, "text": ""})  # fmt: skip
    view({"type": "tool.start", "ts": time.time(), **base, "seq": 1, "tool": "shell",
          "target": "pytest -q"})  # fmt: skip
    line = out.await_line(r"^b1/api: #1 shell still running after ")
    assert line.endswith(": pytest -q")
    view({"type": "tool.call", "ts": time.time(), **base, "seq": 1, "tool": "shell",
          "input": {"command": "pytest -q"}, "outcome": "ran", "refused_by": None,
          "result": {"exit_code": 0, "stdout": "", "stderr": ""}, "hooks": [],
          "tool_seconds": 0.4, "hook_seconds": 0.0})  # fmt: skip
    out.await_line(r"^b1/api: waiting for the model's answer for .* \(turn 2\)$")
    view({"type": "role.end", "ts": time.time(), **base, "status": "succeeded", "error": None,
          "turns": 2, "calls": 1, "refused": 0})  # fmt: skip
    view.close()
    said = out.lines()
    after_end = said[said.index(next(x for x in said if x.startswith("b1/api: succeeded"))) :]
    assert not [x for x in after_end if "waiting" in x or "still running" in x]


def test_heartbeats_follow_the_clock_not_the_events() -> None:
    """One line per `interval` of waiting, counted from the wait's start: a driven clock."""
    now = [100.0]
    out = Capture()
    view = PlainProgress(out, interval=60, flush=0, github=False, color=False,
                         clock=lambda: now[0])  # fmt: skip
    base = {"step": "dev-spec", "batch": None, "role": "analyst"}
    view({"type": "run.start", "ts": 1.0, "step": "dev-spec", "run_id": "r"})
    view({"type": "role.start", "ts": 1.0, **base})
    assert view.heartbeats(now[0] + 59.9) == []
    assert view.heartbeats(now[0] + 60) == [
        "analyst: waiting for the model's answer for 1 min 00 s (turn 1)"
    ]
    assert view.heartbeats(now[0] + 61) == []  # said already for this minute
    assert view.heartbeats(now[0] + 185) == [
        "analyst: waiting for the model's answer for 3 min 05 s (turn 1)"
    ]
    now[0] += 200  # an event: a new wait begins
    view({"type": "hook.run", "ts": 2.0, "role": "analyst", "event": "Stop", "command": "x",
          "exit_code": 0, "seconds": 0.1, "timed_out": False, "first_line": ""})  # fmt: skip
    assert view.heartbeats(now[0] + 30) == []
    view.close()


# --- colour ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_force_color_colours_plain_and_logs_and_no_color_wins(tmp_path: Path) -> None:
    forced = orkeon_run(tmp_path, workspace(tmp_path / "1"), INPUTS, "--progress", "plain", FORCE_COLOR="1",
                        ORKEON_LOG_LEVEL="info")  # fmt: skip
    lines = forced.stderr.splitlines()
    assert "b1: audit \x1b[32mpassed\x1b[0m" in lines
    # Colour never comes before the role's name: grep '^b1/api:' still works.
    assert [x for x in lines if x.startswith("b1/api: #2 file_write docs/x.md: \x1b[33mrefused")]
    logged = [x for x in lines if "step started" in x]
    assert logged and COLOUR.search(logged[0]) and not logged[0].startswith("{")
    both = orkeon_run(tmp_path, workspace(tmp_path / "2"), INPUTS, "--progress", "plain", FORCE_COLOR="1",
                      NO_COLOR="1", ORKEON_LOG_LEVEL="info")  # fmt: skip
    assert "\x1b" not in both.stderr
    assert "b1: audit passed" in both.stderr.splitlines()
    assert [x for x in both.stderr.splitlines() if "step started" in x and not x.startswith("{")]
    plain = orkeon_run(tmp_path, workspace(tmp_path / "3"), INPUTS, "--progress", "plain",
                       ORKEON_LOG_LEVEL="info")  # fmt: skip
    assert "\x1b" not in plain.stderr  # a pipe: no colour unless forced
    (logged,) = [x for x in plain.stderr.splitlines() if "step started" in x]
    assert json.loads(logged)["level"] == "info"  # a JSON line, as without FORCE_COLOR


# --- live, on a terminal ------------------------------------------------------------------


def on_a_terminal(
    tmp: Path, ws: Path, doc: dict[str, Any], *args: str, stdout_too: bool = False, **env: str
) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (140 columns); stdout to a pipe, or to the
    same terminal. (exit code, what the terminal showed, stdout)."""
    (tmp / "inputs.json").write_text(json.dumps(doc))
    argv = [sys.executable, "-m", "orkeon_run", "run", "dev-batches", "--inputs",
            f"@{tmp / 'inputs.json'}", "--workspace", str(ws), *args]  # fmt: skip
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    # The terminal's own size, not one a COLUMNS or LINES of the test's environment gives.
    base = {k: v for k, v in environ(tmp).items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(  # stderr on a terminal: Popen, not kit.process
        argv, stdin=subprocess.DEVNULL, stdout=slave if stdout_too else subprocess.PIPE,
        stderr=slave, cwd=tmp, env={**base, "TERM": "xterm-256color", **env},
    )  # fmt: skip
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every copy of the terminal's other side is closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    stdout = "" if stdout_too else proc.stdout.read().decode()  # type: ignore[union-attr]
    return proc.wait(timeout=60), shown.decode("utf-8", "replace"), stdout


def frames(shown: str) -> list[str]:
    """What the terminal showed, split where the view moved the cursor up to redraw; each
    line without its escapes, its carriage return and the spaces that pad it."""
    parts = re.split(r"(?:\x1b\[2K\x1b\[1A)+\x1b\[2K", shown)
    return [
        "\n".join(line.rstrip() for line in ANSI.sub("", part).replace("\r", "").split("\n"))
        for part in parts
    ]


def test_live_view_on_a_terminal_and_the_result_on_stdout(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, shown, stdout = on_a_terminal(tmp_path, ws, INPUTS)  # auto: live on a terminal
    assert code == 1
    result = json.loads(stdout)  # stdout redirected: the result document, clean
    assert stdout.count("\n") == 1 and result["exit_code"] == 1
    assert "\x1b[1A\x1b[2K" in shown  # redrawn in place
    views = frames(shown)
    running = [v for v in views if re.search(r"^  b1/api +running ", v, re.M)]
    assert running, views
    assert re.search(r"^batch b1 +running ", running[0], re.M)
    assert re.search(r"^  b1/tests +\w+", running[0], re.M)
    assert re.search(r"budget [\d.]+ s of 10 min 00 s \(\d+ %\), \d of 8 turns", running[0])
    # The last frame is the summary the view is cleared to.
    summary = views[-1]
    assert re.search(r"^dev-batches failed \(exit 1\) in [\d.]+ s · run " + result["run_id"],
                     summary, re.M)  # fmt: skip
    assert re.search(r"^ +status +turns +calls +refused +time +charged +cost$", summary, re.M)
    assert re.search(
        r"^  b1/api +succeeded +3 +4 +2 +[\d.]+ s +[\d.]+ s +\$0\.0000$", summary, re.M
    )
    assert re.search(r"^  b2/docs +succeeded +2 +1 +0 ", summary, re.M)
    assert re.search(r"^  audit b1 +passed", summary, re.M)
    assert re.search(r"^  audit b2 +FAILED", summary, re.M)
    assert "error: the audit of batch b2 failed: test ! -e docs/y.md" in summary
    assert "running" not in summary and "waiting" not in summary
    assert COLOUR.search(shown)


def test_live_honours_no_color(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, shown, _ = on_a_terminal(tmp_path, ws, INPUTS, "--progress", "live", NO_COLOR="1",
                                   ORKEON_LOG_LEVEL="info")  # fmt: skip
    assert code == 1
    assert "\x1b[1A\x1b[2K" in shown and "step started" in shown  # the view, and the log
    assert not COLOUR.search(shown), shown


def test_on_a_terminal_plain_when_asked_or_when_events_stream_to_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, shown, _ = on_a_terminal(tmp_path, ws, INPUTS, ORKEON_PROGRESS="plain")
    assert code == 1 and "\x1b[1A" not in shown
    assert "b1/api: started" in ANSI.sub("", shown).splitlines()
    # stream-json to the same terminal: a view redrawn in place would tear its lines.
    code, shown, _ = on_a_terminal(tmp_path, ws, INPUTS, "--output", "stream-json",
                                   stdout_too=True)  # fmt: skip
    assert code == 1 and "\x1b[1A" not in shown
    text = ANSI.sub("", shown).replace("\r\n", "\n").splitlines()
    assert "b1/api: started" in text
    assert [json.loads(x)["type"] for x in text if x.startswith("{")][-1] == "result"


@pytest.mark.parametrize(
    ("flag", "env", "stderr_tty", "stdout_tty", "output", "mode"),
    [
        (None, {}, True, False, "json", "live"),
        (None, {}, False, False, "json", "plain"),
        (None, {}, True, True, "text", "live"),
        (None, {}, True, True, "stream-json", "plain"),
        (None, {"ORKEON_PROGRESS": "none"}, True, False, "json", "none"),
        ("plain", {"ORKEON_PROGRESS": "live"}, True, False, "json", "plain"),
        (None, {"ORKEON_PROGRESS": ""}, False, False, "json", "plain"),
    ],
)
def test_choose(flag: str | None, env: dict[str, str], stderr_tty: bool, stdout_tty: bool,
                output: str, mode: str) -> None:  # fmt: skip
    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    got = progress.choose(flag, output=output, environ=env, stderr=Stream(stderr_tty),
                          stdout=Stream(stdout_tty))  # fmt: skip
    assert got == mode


def test_the_tracker_marks_time_and_cost_budgets() -> None:
    t = Tracker()
    t.update({"type": "run.start", "ts": 0.0, "step": "s", "run_id": "r",
              "budget": {"seconds": 10.0, "turns": None, "tokens": None, "usd": 5.0}})  # fmt: skip
    turn = {"type": "model.turn", "ts": 1.0, "step": "s", "batch": None, "role": "a", "turn": 1,
            "tokens_in": 10, "tokens_out": 5, "tool_calls": 0, "text": ""}  # fmt: skip
    assert t.update({**turn, "seconds": 4.0, "usd": 1.0}) == []
    assert t.update({**turn, "seconds": 1.0, "usd": 1.5}) == [("seconds", 50), ("usd", 50)]
    assert t.mark_line("seconds", 50) == "budget: 50 % of the time budget used (5.00 s of 10.0 s)"
    assert t.mark_line("usd", 50) == "budget: 50 % of the cost budget used ($2.50 of $5.00)"
    # From 50 % straight past 80 % to 100 %: one line, the highest mark.
    assert t.update({**turn, "seconds": 6.0, "usd": None}) == [("seconds", 100)]
    assert t.roles["a"].usd is None  # a turn of unknown price: the role's cost is unknown
    assert t.update({**turn, "seconds": 1.0, "usd": 3.0}) == [("usd", 100)]


def _pipeline_events() -> list[dict[str, Any]]:
    """A pipeline's events, as its run writes them: the steps around their roles, then the
    pipeline's result (its `error` an object with `kind` and `message`)."""

    def step(kind: str, name: str, ts: float, **more: Any) -> dict[str, Any]:
        return {"type": kind, "ts": ts, "name": name, "step": name, "run_id": name, **more}

    role = {"step": "dev-spec", "batch": None, "role": "analyst"}
    return [
        {"type": "run.start", "ts": 0.0, "step": "pipeline", "run_id": "p1", "budget": {}},
        step("step.start", "dev-spec", 0.1, resume=False),
        {"type": "role.start", "ts": 0.2, **role},
        {"type": "role.end", "ts": 0.3, "status": "succeeded", "turns": 1, "calls": 0,
         "refused": 0, **role},
        step("step.end", "dev-spec", 0.4, status="succeeded", exit_code=0),
        step("step.start", "dev-plan", 0.5, resume=False),
        step("step.end", "dev-plan", 0.6, status="failed", exit_code=1),
        {"type": "result", "ts": 0.7, "step": "pipeline", "run_id": "p1", "status": "failed",
         "exit_code": 1, "roles": [], "budget": {"used_seconds": 0.6, "usd": 0.0},
         "error": {"kind": "role", "message": "the planner did not write the plan"}},
    ]  # fmt: skip


def test_the_live_view_of_a_pipeline_shows_its_steps_and_the_summary_its_error() -> None:
    from io import StringIO

    from rich.console import Console

    from orkeon_run.run.progress.live import LiveProgress

    view = LiveProgress(StringIO())
    events = _pipeline_events()
    for e in events[:6]:  # dev-plan has started, dev-spec has ended
        view.tracker.update(e)
    out = StringIO()
    Console(file=out, width=120, no_color=True).print(view._view(1.0))
    assert "steps: dev-spec succeeded · dev-plan running" in out.getvalue()
    for e in events[6:]:
        view.tracker.update(e)
    out = StringIO()
    Console(file=out, width=120, no_color=True).print(view._summary())
    shown = out.getvalue()
    assert "pipeline failed (exit 1)" in shown
    assert "steps: dev-spec succeeded · dev-plan failed" in shown
    assert "error: the planner did not write the plan" in shown


def test_plain_says_a_result_error_object_by_its_message(tmp_path: Path) -> None:
    out = tmp_path / "plain.txt"
    with out.open("w") as stream:
        view = PlainProgress(stream, flush=0.0)
        for e in _pipeline_events():
            view(e)
        view.close()
    lines = out.read_text().splitlines()
    assert lines[-1].startswith("pipeline: failed (exit 1) in ")
    assert lines[-1].endswith("; the planner did not write the plan")
    assert "dev-plan: step failed (exit 1)" in lines
