"""orkeon as a real process: how it ends when interrupted before a run starts, and when
the reader of its output goes away."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from orkeon_run.__main__ import main


def test_a_bad_command_line_gets_one_line(capsys) -> None:
    assert main(["run", "dev-batches", "--inputs", "{}", "--output", "yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("orkeon: ") and "'yaml' is not one of" in err and "\n" not in err


def _reading_stdin(pid: int, timeout: float = 60.0) -> None:
    """Wait until process `pid` is blocked in read(2) on its standard input, as Linux shows
    it in /proc/PID/syscall (`0 0x0 …`: syscall 0, read, on descriptor 0). The event is
    awaited; `timeout` is only a hang guard (quiet: well under 1 s, so 60 s is 60x and more)."""
    deadline = time.monotonic() + timeout
    syscall = Path(f"/proc/{pid}/syscall")
    while time.monotonic() < deadline:
        try:
            if syscall.read_text().startswith("0 0x0 "):
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never blocked reading its standard input")


def test_ctrl_c_before_the_run_starts_is_exit_130_and_one_line(tmp_path) -> None:
    """Exit 130: interrupted. Ctrl-C while orkeon waits for its inputs on stdin (no run,
    so no result yet)."""
    argv = [sys.executable, "-m", "orkeon_run", "validate", "--inputs", "-"]
    proc = subprocess.Popen(  # signalled while it waits on its stdin: Popen, not kit.process
        argv, stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    _reading_stdin(proc.pid)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.splitlines()[-1:] == ["orkeon: interrupted"], err


def test_ctrl_c_while_the_command_line_loads_is_exit_130_too(tmp_path) -> None:
    """However early the Ctrl-C comes once orkeon's code runs, the answer is the same one
    line: here it comes exactly while typer is being imported (an import hook raises the
    KeyboardInterrupt a Ctrl-C would)."""
    code = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            raise KeyboardInterrupt\n"
        "sys.argv = ['orkeon', 'validate', '--inputs', '{}']\n"
        "import orkeon_run.__main__ as m\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "m.entry()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 130, out.stderr
    assert out.stderr.splitlines() == ["orkeon: interrupted"], out.stderr


def test_a_reader_that_goes_away_is_exit_1_and_no_internal_error(tmp_path) -> None:
    """`orkeon validate ... | head -c 3`: the pipe closes before everything is written."""
    script = tmp_path / "s.json"
    script.write_text("{}")
    doc = json.dumps({"model": {"provider": "scripted", "script": str(script)}})
    argv = [sys.executable, "-m", "orkeon_run", "validate", "--inputs", "-"]
    proc = subprocess.Popen(  # its stdout closed before it writes: Popen, not kit.process
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()  # nobody reads what it prints
    _, err = proc.communicate(input=doc.encode(), timeout=60)
    assert proc.returncode == 1
    assert b"internal error" not in err and b"Traceback" not in err, err
