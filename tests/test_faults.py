"""Faults, through a real `orkeon run dev-batches` (the runner in-process, or the real
command where the process itself is measured) with the scripted model or a loopback model
server: hooks that hang, ignore SIGTERM, leave children holding their pipes, print 100 MB,
stop mid-line or vanish after validation; model servers that hang, drop the connection or
answer garbage; tools that raise.

Each run must end with the documented outcome (exit code, status, and the exact text the
model read in the `tool.call` event's `result`), in bounded time, with every line of
events.jsonl strict JSON and result.json written (`check_run`).

No verdict here reads the wall clock's upper side. Each slow path a test rules out (a
hook's own 60 s limit, a grandchild holding the pipes 30 s, a hook that runs until
SIGKILL, a server that never answers) takes longer than the test's `timeout` mark, so
reaching the end at all is the verdict; the marks are hang guards, 5x and more the
quiet figure of their test (2 to 4 s; the 100 MB ones about 4 s against 30).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import DATA, ROOT
from kit.fakes import anthropic_api
from kit.fakes.anthropic_api import AnthropicFake
from kit.fakes.protocols import PROTOCOLS, Protocol
from kit.mcp import namespaced
from kit.process import orkeon
from kit.steps import environ, make_workspace, run_step, write

from orkeon_run.__main__ import main
from orkeon_run.tools.sandbox.veil import veil_status

FAULTS = DATA / "faults"
FILES = {"README.md": "# app\n", "src/__init__.py": ""}
PLAN = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}
CREATED = "created src/x.py (1 bytes)"


def fault(name: str) -> str:
    return str(FAULTS / name)


def q(path: str) -> str:
    """A path as one word of a hook's command, whatever the checkout's path holds."""
    return shlex.quote(path)


def doc(
    calls: list[dict[str, Any]],
    *,
    hooks: Any = None,
    allowed: tuple[str, ...] = (),
    seconds: float = 30,
    **more: Any,
) -> dict[str, Any]:
    """Inputs for one batch of one role, b1/a (roots src/), whose first turn makes `calls`."""
    script = {"b1/a": [{"tool_calls": calls}, {"text": "done"}]}
    d: dict[str, Any] = {
        "model": {"provider": "scripted", "script": script},
        "plan": PLAN,
        "budget": {"seconds": seconds},
    }
    if hooks is not None:
        d["hooks"] = hooks
    if allowed:
        d["shell"] = {"extra_allowed_commands": list(allowed)}
    d.update(more)
    return d


def pre(command: str) -> list[dict[str, str]]:
    return [{"event": "pre-tool", "command": command}]


def settings(event: str, command: str, timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {event: [{"matcher": "file_write", "hooks": [hook]}]}


def strict_json(text: str | bytes) -> Any:
    """json.loads that refuses what JSON does not have (NaN, Infinity)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def check_run(rd: Path, result: dict[str, Any], *, status: str, exit_code: int) -> list[Any]:
    """docs/output.md: every event line whole and strict JSON, the last one the result,
    result.json written and equal to it. Returns the events."""
    assert result["status"] == status, result["error"]
    assert result["exit_code"] == exit_code
    raw = (rd / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    events = [strict_json(line) for line in raw.split(b"\n")[:-1]]
    assert all(isinstance(e, dict) and "type" in e and "ts" in e for e in events)
    assert events[-1]["type"] == "result"
    saved = strict_json((rd / "result.json").read_bytes())
    assert saved == result
    assert {k: v for k, v in events[-1].items() if k not in ("type", "ts")} == saved
    return events


def calls_of(events: list[Any]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool.call"]


def gone(pid: int) -> bool:
    """The process has ended (a zombie no reaper collected counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def host_pids(pid: int, ws: Path) -> list[int]:
    """The host's pids of a hook's process that wrote `pid` (`$$`), working in `ws`: hooks
    run in a PID namespace of their own (docs/security.md, "Hooks"); where no veil can be
    made here, `pid` itself."""
    return namespaced(pid, ws) if veil_status()[0] is not None else [pid]


def wait_gone(pid: int, ws: Path) -> bool:
    """Awaits the end of a process that was sent SIGKILL (a hook's, in its PID namespace),
    however long the machine takes to reap it; the test's time-out (its hang guard) ends
    a wait that would never end."""
    while not all(gone(p) for p in host_pids(pid, ws)):
        time.sleep(0.02)
    return True


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path, FILES)


# --- native hooks ----------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_native_hook_that_never_exits_is_cut_at_the_budget(tmp_path: Path, ws: Path) -> None:
    """docs/inputs.md: "A hook's time limit is the smaller of its own and what is
    left." The hooks contract: "the first that exits with a code other than 0, runs longer than 60
    seconds or cannot run refuses the call". With 1.5 s of budget the hook is killed at
    1.5 s, refuses the call, and the step ends budget_exhausted (exit 3)."""
    pidfile = tmp_path / "hook.pid"
    script = fault("never_exits.sh")
    d = doc(
        [write("src/x.py", "x"), write("src/y.py", "y")],
        hooks=pre(f"{q(script)} {pidfile} {{tool}} {{path}}"),
        allowed=(script,),
        seconds=1.5,
    )
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="budget_exhausted", exit_code=3)
    assert result["budget"]["exhausted"] == "seconds"
    first, second = calls_of(events)
    # The budget, not the hook's own 60 s, stopped it: the model reads the budget text.
    assert first["result"] == "[refused: the step's time budget is spent]"
    assert (first["outcome"], first["refused_by"]) == ("refused", "budget")
    (run,) = first["hooks"]
    assert (run["n"], run["exit_code"], run["timed_out"]) == (1, None, True)
    assert run["seconds"] >= 1.4
    # The budget is spent: the second call starts nothing.
    assert second["result"] == "[refused: the step's time budget is spent]"
    assert (second["refused_by"], second["hooks"]) == ("budget", [])
    assert not (ws / "src/x.py").exists()
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(20)
def test_native_hook_that_ignores_sigterm_is_killed(tmp_path: Path, ws: Path) -> None:
    """DESIGN "Where the care goes": a hook that ignores SIGTERM "must not hang ... orkeon":
    SIGTERM at the limit, SIGKILL 2 s later, and the hook is gone."""
    pidfile = tmp_path / "hook.pid"
    script = fault("ignore_term.sh")
    d = doc(
        [write("src/x.py", "x")],
        hooks=pre(f"{q(script)} {pidfile}"),
        allowed=(script,),
        seconds=0.8,
    )
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="budget_exhausted", exit_code=3)
    (call,) = calls_of(events)
    assert (call["result"], call["refused_by"]) == (
        "[refused: the step's time budget is spent]",
        "budget",
    )
    (run,) = call["hooks"]
    assert run["timed_out"] and run["exit_code"] is None
    assert run["first_line"] == "ignoring TERM"
    assert run["seconds"] >= 2.5  # the limit, then the 2 s grace before SIGKILL
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(20)
def test_native_hook_leaving_a_grandchild_on_its_pipes(tmp_path: Path, ws: Path) -> None:
    """proc: "we never wait on a grandchild". The hook exits 0 at once; the grandchild that
    holds its stdout is killed with its group and the call runs."""
    pidfile = tmp_path / "grandchild.pid"
    script = fault("grandchild.sh")
    d = doc([write("src/x.py", "x")], hooks=pre(f"{q(script)} {pidfile}"), allowed=(script,))
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert (call["outcome"], call["result"]) == ("ran", CREATED)
    (run,) = call["hooks"]
    assert (run["exit_code"], run["timed_out"]) == (0, False)
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(20)
def test_native_hook_leaving_an_escaped_grandchild_on_its_pipes(tmp_path: Path, ws: Path) -> None:
    """A grandchild that left the group (setsid) cannot be killed with it; orkeon still
    stops reading at once and the call runs."""
    pidfile = tmp_path / "escaped.pid"
    script = fault("escaped_grandchild.py")
    d = doc([write("src/x.py", "x")], hooks=pre(f"{q(script)} {pidfile}"), allowed=(script,))
    rd = tmp_path / "run"
    try:
        result = run_step("dev-batches", d, ws, run_dir=rd)
        events = check_run(rd, result, status="succeeded", exit_code=0)
        (call,) = calls_of(events)
        assert (call["outcome"], call["result"]) == ("ran", CREATED)
        assert call["hooks"][0]["exit_code"] == 0
    finally:
        if pidfile.exists():
            for pid in host_pids(int(pidfile.read_text()), ws):
                if not gone(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(30)
def test_native_hook_printing_100_mb_on_one_line(tmp_path: Path, ws: Path) -> None:
    """DESIGN: a hook that "prints megabytes must not hang or bloat orkeon ... its output
    capped". Through the real command: 100 MB on one line, exit 1; the model reads the
    line cut to 1000 characters (native.py: "cut to 1000 characters (`…` marks a cut)")."""
    script = fault("print_100mb.sh")
    d = doc([write("src/x.py", "x")], hooks=pre(f"{q(script)} out 1"), allowed=(script,))
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(d))
    rd = tmp_path / "run"
    env = environ(tmp_path, PYTHONPATH=str(ROOT))
    args = ["run", "dev-batches", "--inputs", f"@{inputs}", "--workspace", str(ws)]
    proc = orkeon(*args, "--run-dir", str(rd), "--output", "json", cwd=tmp_path, env=env,
                  timeout=25)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # The refusal is the model's to read; the role goes on and ends, nothing was written.
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    line = "x" * 999 + "…"
    assert call["result"] == f"[pre-tool hook #1 ({q(script)} out 1) exited 1: {line}]"
    assert call["hooks"][0]["first_line"] == line
    assert not (ws / "src/x.py").exists()


# Starts argv and prints its exit code and the peak resident memory wait4 reports, in KiB.
# The launcher is a fresh, small process: a child forked from the test's own (large) pytest
# process would be charged that process's memory, which it carries until it execs.
PEAK_OF = (
    "import os, subprocess, sys\n"
    "proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(proc.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
)


@pytest.mark.timeout(30)
def test_peak_memory_with_a_100_mb_hook(tmp_path: Path, ws: Path) -> None:
    """The same run, its peak resident memory read with wait4: well under the 100 MB the
    hook printed (the output is read in 64 KiB chunks and kept up to 1 MiB)."""
    script = fault("print_100mb.sh")
    d = doc(
        [write("src/x.py", "x")],
        hooks=[{"event": "post-tool", "command": f"{q(script)} err 0"}],
        allowed=(script,),
    )
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(d))
    rd = tmp_path / "run"
    env = environ(tmp_path, PYTHONPATH=str(ROOT))
    args = ["run", "dev-batches", "--inputs", f"@{inputs}", "--workspace", str(ws)]
    out = orkeon(*args, "--run-dir", str(rd), "--output", "json", cwd=tmp_path, env=env,
                 timeout=None, wrap=[sys.executable, "-c", PEAK_OF])  # fmt: skip
    assert out.returncode == 0, out.stderr
    code, peak_kib = map(int, out.stdout.split())
    assert code == 0
    result = strict_json((rd / "result.json").read_bytes())
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    # A post-tool hook that exits 0 leaves the result exactly as it was.
    assert call["result"] == CREATED
    assert call["hooks"][0]["exit_code"] == 0
    peak_mb = peak_kib / 1024
    assert peak_mb < 90, f"orkeon peaked at {peak_mb:.0f} MB"


@pytest.mark.timeout(20)
def test_native_hook_that_exits_mid_line(tmp_path: Path, ws: Path) -> None:
    """docs/hooks.md: `[pre-tool hook #N (CMD) exited CODE: LINE]`, LINE "the first
    line the hook printed". A line with no newline is still a line."""
    script = fault("mid_line.sh")
    d = doc(
        [write("src/x.py", "x")],
        hooks=[
            {"event": "pre-tool", "command": f"{q(script)} out 0"},
            {"event": "post-tool", "command": f"{q(script)} err 3"},
            {"event": "pre-tool", "command": f"{q(script)} out 1"},
        ],
        allowed=(script,),
    )
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert call["result"] == f"[pre-tool hook #3 ({q(script)} out 1) exited 1: half a line]"
    assert [(h["n"], h["exit_code"]) for h in call["hooks"]] == [(1, 0), (3, 1)]
    assert not (ws / "src/x.py").exists()


@pytest.mark.timeout(20)
def test_native_hooks_deleted_between_validation_and_use(tmp_path: Path, ws: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that cannot run refuses every call of the
    step"; docs/hooks.md: "a post-tool hook that cannot run adds its `could not run` line to
    every result"."""
    pre_copy = tmp_path / "pre.sh"
    post_copy = tmp_path / "post.sh"
    shutil.copy(fault("allow.sh"), pre_copy)
    shutil.copy(fault("allow.sh"), post_copy)
    calls = [write("src/x.py", "x"), {"tool": "file_read", "input": {"file_path": "README.md"}}]
    d = doc(
        calls,
        hooks=[
            {"event": "post-tool", "command": f"{post_copy} {{tool}}"},
            {"event": "pre-tool", "command": f"{pre_copy} {{tool}} {{path}}"},
        ],
        allowed=(str(pre_copy), str(post_copy)),
        audit={"test": ["test", "-f", "src/x.py"]},
    )
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(d))
    assert main(["validate", "--inputs", f"@{inputs}", "--workspace", str(ws)]) == 0
    pre_copy.unlink()
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="failed", exit_code=1)
    first, second = calls_of(events)
    why = f"no such program: {pre_copy}"
    assert (
        first["result"]
        == f"[pre-tool hook #2 ({pre_copy} file_write src/x.py) could not run: {why}]"
    )
    assert (
        second["result"]
        == f"[pre-tool hook #2 ({pre_copy} file_read README.md) could not run: {why}]"
    )
    assert [c["refused_by"] for c in (first, second)] == ["hook", "hook"]
    assert first["hooks"][0]["exit_code"] is None and first["hooks"][0]["first_line"] == why
    assert not (ws / "src/x.py").exists()
    assert result["audits"][0]["failed_command"] == ["test", "-f", "src/x.py"]

    # Now the post-tool hook goes: every result gets its line.
    post_copy.unlink()
    shutil.copy(fault("allow.sh"), pre_copy)
    rd2 = tmp_path / "run2"
    result = run_step("dev-batches", d, ws, run_dir=rd2)
    events = check_run(rd2, result, status="succeeded", exit_code=0)
    first, second = calls_of(events)
    why = f"no such program: {post_copy}"
    assert (
        first["result"]
        == f"{CREATED}\n[post-tool hook #1 ({post_copy} file_write) could not run: {why}]"
    )
    assert (
        second["result"]
        == f"# app\n[post-tool hook #1 ({post_copy} file_read) could not run: {why}]"
    )
    assert [c["outcome"] for c in (first, second)] == ["ran", "ran"]


# --- settings-shape hooks --------------------------------------------------------------


@pytest.mark.timeout(20)
def test_settings_hook_that_never_exits_is_killed_at_its_timeout(tmp_path: Path, ws: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that exceeds it is killed and reported as
    a non-blocking message": the call runs and the model reads the tool's result exactly."""
    pidfile = tmp_path / "hook.pid"
    command = f"{q(fault('never_exits.sh'))} {pidfile}"
    d = doc([write("src/x.py", "x")], hooks=settings("PreToolUse", command, timeout=0.5))
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert (call["outcome"], call["result"]) == ("ran", CREATED)
    (run,) = call["hooks"]
    assert (run["n"], run["event"], run["command"]) == (None, "PreToolUse", command)
    assert (run["exit_code"], run["timed_out"]) == (None, True)
    assert run["seconds"] >= 0.45
    assert (ws / "src/x.py").read_text() == "x"
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(20)
def test_settings_hook_that_ignores_sigterm(tmp_path: Path, ws: Path) -> None:
    """The hooks contract (docs/hooks.md): "If a hook ignores SIGTERM, OrbCode escalates to
    SIGKILL after a 2s grace.\""""
    pidfile = tmp_path / "hook.pid"
    command = f"{q(fault('ignore_term.sh'))} {pidfile}"
    d = doc([write("src/x.py", "x")], hooks=settings("PostToolUse", command, timeout=0.3))
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert (call["outcome"], call["result"]) == ("ran", CREATED)
    (run,) = call["hooks"]
    assert run["timed_out"] and run["seconds"] >= 2.2
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(20)
def test_settings_hook_leaving_a_grandchild_on_its_pipes(tmp_path: Path, ws: Path) -> None:
    """The shell's background job holds stdout; the hook's answer is read at once."""
    pidfile = tmp_path / "grandchild.pid"
    command = f"sleep 30 & echo $! > {pidfile}; echo ok"
    d = doc([write("src/x.py", "x")], hooks=settings("PreToolUse", command))
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert (call["outcome"], call["result"]) == ("ran", CREATED)
    assert call["hooks"][0]["exit_code"] == 0
    assert wait_gone(int(pidfile.read_text()), ws)


@pytest.mark.timeout(30)
def test_settings_hook_blocking_with_100_mb_of_reason(tmp_path: Path, ws: Path) -> None:
    """docs/hooks.md: `[PreToolUse hook (CMD) blocked the call: REASON]`, REASON the
    stderr of an exit 2, capped at 8192 bytes."""
    command = f"{q(fault('print_100mb.sh'))} err 2"
    d = doc([write("src/x.py", "x")], hooks=settings("PreToolUse", command))
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    head = f"[PreToolUse hook ({command}) blocked the call: "
    assert call["result"].startswith(head) and call["result"].endswith("\n[cut]]")
    why = call["result"][len(head) : -1]
    assert why == "x" * (8192 - len("\n[cut]")) + "\n[cut]"
    assert (call["outcome"], call["refused_by"]) == ("refused", "hook")
    assert not (ws / "src/x.py").exists()


@pytest.mark.timeout(20)
def test_settings_hooks_that_exit_mid_line(tmp_path: Path, ws: Path) -> None:
    """The hooks contract (docs/hooks.md): exit 2 blocks with stderr as the reason; "other
    (1, 3, …)": non-blocking."""
    script = fault("mid_line.sh")
    hooks = {
        "PreToolUse": [
            {
                "matcher": "file_read",
                "hooks": [{"type": "command", "command": f"{q(script)} err 1"}],
            },
            {
                "matcher": "file_write",
                "hooks": [{"type": "command", "command": f"{q(script)} err 2"}],
            },
        ]
    }
    calls = [write("src/x.py", "x"), {"tool": "file_read", "input": {"file_path": "README.md"}}]
    d = doc(calls, hooks=hooks)
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    blocked, ran = calls_of(events)
    assert (
        blocked["result"] == f"[PreToolUse hook ({q(script)} err 2) blocked the call: half a line]"
    )
    assert (ran["outcome"], ran["result"]) == ("ran", "# app\n")
    assert ran["hooks"][0]["exit_code"] == 1 and ran["hooks"][0]["first_line"] == "half a line"


@pytest.mark.timeout(20)
def test_settings_hook_deleted_between_validation_and_use(tmp_path: Path, ws: Path) -> None:
    """The hooks contract (docs/hooks.md): "A hook that fails to start, errors, or times out
    is surfaced as a non-blocking message; it never crashes OrbCode." The shell answers 127."""
    copy = tmp_path / "guard.sh"
    shutil.copy(fault("allow.sh"), copy)
    d = doc([write("src/x.py", "x")], hooks=settings("PreToolUse", str(copy)))
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(d))
    assert main(["validate", "--inputs", f"@{inputs}", "--workspace", str(ws)]) == 0
    copy.unlink()
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert (call["outcome"], call["result"]) == ("ran", CREATED)
    assert call["hooks"][0]["exit_code"] == 127


# --- model servers ---------------------------------------------------------------------


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with `handle(conn)`, in a
    thread: for what no HTTP library will send (a hang, a cut-off reply, garbage)."""

    def __init__(self, handle: Callable[[socket.socket, threading.Event], None]) -> None:
        self.handle = handle
        self.stopping = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            t = threading.Thread(target=self._one, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _one(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.handle(conn, self.stopping)

    def close(self) -> None:
        self.stopping.set()
        self._accept.join(2)
        self.sock.close()
        for t in self._threads:
            t.join(2)


def read_request(conn: socket.socket) -> bytes:
    """The whole HTTP request (headers, then content-length bytes of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    want = int(m.group(1)) if m else 0
    while len(body) < want:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def hang(conn: socket.socket, stopping: threading.Event) -> None:
    read_request(conn)
    stopping.wait(30)


def cut_off(conn: socket.socket, stopping: threading.Event) -> None:
    read_request(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n"
        b'{"id": "msg_1", "type": "message", "content": [{"type": "te'
    )


def garbage(conn: socket.socket, stopping: threading.Event) -> None:
    read_request(conn)
    body = b"\x00\xff<html>502 Bad Gateway</html>\xfe"
    head = f"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {len(body)}\r\n\r\n"
    conn.sendall(head.encode() + body)


def not_http(conn: socket.socket, stopping: threading.Event) -> None:
    read_request(conn)
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02")


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[..., None]], RawServer]]:
    made: list[RawServer] = []

    def start(handle: Callable[..., None]) -> RawServer:
        made.append(RawServer(handle))
        return made[-1]

    yield start
    for s in made:
        s.close()


def http_doc(provider: str, url: str, **model: Any) -> dict[str, Any]:
    d = doc([])
    name = "claude-x" if provider == "anthropic" else "gpt-x"
    d["model"] = {"provider": provider, "model": name, "base_url": url, **model}
    return d


def run_http(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path, d: dict[str, Any]
) -> tuple[Path, dict[str, Any]]:
    for proto in PROTOCOLS:  # the keys the fakes expect
        monkeypatch.setenv(proto.key_env, proto.key)
    rd = tmp_path / "run"
    return rd, run_step("dev-batches", d, ws, run_dir=rd)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_model_server_that_hangs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path, raw_server: Any, provider: str
) -> None:
    """docs/output.md: exit 4, "the model provider failed". Each attempt is cut at
    `timeout_seconds`; with `max_retries` 1 there are two."""
    server = raw_server(hang)
    d = http_doc(provider, server.url, timeout_seconds=0.4, max_retries=1)
    rd, result = run_http(monkeypatch, tmp_path, ws, d)
    check_run(rd, result, status="failed", exit_code=4)
    (role,) = result["roles"]
    assert role["status"] == "failed" and role["error_kind"] == "provider"
    label = "anthropic claude-x" if provider == "anthropic" else "openai gpt-x"
    assert role["error"] == f"{label}: no reply within 0.4 s (2 attempts)"
    assert result["error"] == {"kind": "provider", "message": f"role b1/a failed: {role['error']}"}
    assert server.connections == 2


@pytest.mark.timeout(20)
@pytest.mark.parametrize("handle", [cut_off, not_http], ids=["cut_off", "not_http"])
def test_model_server_that_drops_the_connection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path, raw_server: Any, handle: Any
) -> None:
    """A reply cut off mid-body, or bytes that are not HTTP: a connection error, retried,
    then the role fails with one line."""
    server = raw_server(handle)
    d = http_doc("anthropic", server.url, timeout_seconds=2, max_retries=1)
    rd, result = run_http(monkeypatch, tmp_path, ws, d)
    check_run(rd, result, status="failed", exit_code=4)
    (role,) = result["roles"]
    assert role["status"] == "failed"
    assert role["error"].startswith(f"anthropic claude-x: cannot connect to {server.url}: ")
    assert role["error"].endswith(" (2 attempts)") and "\n" not in role["error"]
    assert server.connections == 2


@pytest.mark.timeout(20)
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_model_server_that_answers_garbage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path, raw_server: Any, provider: str
) -> None:
    """A 200 whose body is not JSON fails the role at once (no retry), in one line."""
    server = raw_server(garbage)
    d = http_doc(provider, server.url, timeout_seconds=2, max_retries=3)
    rd, result = run_http(monkeypatch, tmp_path, ws, d)
    check_run(rd, result, status="failed", exit_code=4)
    (role,) = result["roles"]
    label = "anthropic claude-x" if provider == "anthropic" else "openai gpt-x"
    assert role["error"].startswith(f"{label}: the reply is not JSON: ")
    assert server.connections == 1


@pytest.mark.timeout(20)
def test_model_server_answering_json_of_the_wrong_shape(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path
) -> None:
    """JSON that is not a Messages reply (`content` not a list of blocks)."""
    with AnthropicFake(models=("claude-x",)) as server:
        server.push(anthropic_api.Reply(200, {"type": "message", "content": {"oops": 1}}))
        d = http_doc("anthropic", server.url, timeout_seconds=2, max_retries=0)
        rd, result = run_http(monkeypatch, tmp_path, ws, d)
    check_run(rd, result, status="failed", exit_code=4)
    (role,) = result["roles"]
    assert role["error"].startswith("anthropic claude-x: cannot read the reply (")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: p.name)
def test_model_sending_a_lone_surrogate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ws: Path, proto: Protocol
) -> None:
    """JSON's `"\\ud800"` is valid JSON that no UTF-8 can hold. A model that sends one in a
    tool input must not crash the run: the call is refused (the path names no file), the
    next request carries it back escaped, and every file stays valid JSON."""
    bad = {"file_path": "src/\ud800.py", "content": "x\udcff"}
    with proto.server() as server:
        server.push(proto.reply("writing \ud83d", [("call_1", "file_write", bad)]))
        server.push(proto.reply("ok"))
        d = http_doc(proto.name, server.base_url, timeout_seconds=5, max_retries=0)
        d["model"]["model"] = proto.model
        rd, result = run_http(monkeypatch, tmp_path, ws, d)
        assert len(server.requests) == 2
        second = server.requests[1].body
    events = check_run(rd, result, status="succeeded", exit_code=0)
    (call,) = calls_of(events)
    assert call["input"] == bad
    assert call["result"] == "[refused: src/\ud800.py is outside the workspace]"
    assert proto.tool_results(second) == [("call_1", call["result"])]
    transcript = rd / "transcripts" / "b1" / "a.jsonl"
    assert all(strict_json(line) for line in transcript.read_bytes().splitlines())


# --- tools -----------------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_tools_that_raise(tmp_path: Path, ws: Path) -> None:
    """pipeline.py: "a tool that raises becomes `error: TOOL failed: …`, never a crash".
    Real ways in: a glob or a search pattern nested so deep that translating or compiling it
    recurses past Python's limit (in a worker thread), and an offset past any index. Each
    call ends with the tool's own `error: …` text or the pipeline's, on one line; at least
    one goes through the pipeline's net (when a tool learns to answer all of these itself,
    find another real way in); and the role goes on."""
    deep = "{" * 3000 + "}" * 3000
    calls = [
        {"tool": "list_files", "input": {"pattern": deep}},
        {"tool": "search_files", "input": {"pattern": "app", "glob": deep}},
        {"tool": "search_files", "input": {"pattern": "(" * 5000 + ")" * 5000}},
        {"tool": "file_read", "input": {"file_path": "README.md", "offset": 10**30}},
        write("src/x.py", "x"),
    ]
    rd = tmp_path / "run"
    result = run_step("dev-batches", doc(calls), ws, run_dir=rd)
    events = check_run(rd, result, status="succeeded", exit_code=0)
    *odd, wrote = calls_of(events)
    caught = 0
    for c in odd:
        assert (c["outcome"], c["refused_by"]) == ("ran", None)
        text = c["result"]
        assert isinstance(text, str) and text.startswith("error: ") and "\n" not in text
        if text.startswith(f"error: {c['tool']} failed: "):
            assert re.fullmatch(rf"error: {c['tool']} failed: [A-Za-z]+Error: .+", text)
            caught += 1
    assert caught >= 1, [c["result"] for c in odd]
    assert (wrote["outcome"], wrote["result"]) == ("ran", CREATED)
    assert result["roles"][0]["calls"] == 5
