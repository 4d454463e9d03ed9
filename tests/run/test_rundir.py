"""The run directory (docs/output.md): redacted inputs, line-by-line events, atomic
result. "Files are written so that a killed run leaves every finished line intact."
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from orkeon_run.events import EventLog
from orkeon_run.jsonio import atomic_write_json
from orkeon_run.run.rundir import REDACTED, new_run_id, redact


def test_redact_credential_keys_and_values():
    doc = {
        "model": {"provider": "openai", "model": "gpt", "api_key_env": "OPENAI_API_KEY"},
        "extra": {"api_key": "abc", "Auth_Token": "t", "password": "p", "note": "hello"},
        "hooks": [{"event": "pre-tool", "command": "check --key sk-abcdefghijklmnopqrstuv"}],
        "list": [{"secret": 1}],
    }
    out = redact(doc)
    assert out["model"]["api_key_env"] == "OPENAI_API_KEY"  # names a variable, holds no secret
    assert out["extra"]["api_key"] == REDACTED
    assert out["extra"]["Auth_Token"] == REDACTED
    assert out["extra"]["password"] == REDACTED
    assert out["extra"]["note"] == "hello"
    assert out["hooks"][0]["command"] == f"check --key {REDACTED}"
    assert out["list"][0]["secret"] == 1  # only strings are secrets
    assert doc["extra"]["api_key"] == "abc"  # the caller's document is not changed


def test_run_ids_are_unique_and_sortable():
    ids = [new_run_id() for _ in range(50)]
    assert len(set(ids)) == 50
    assert all(len(i.split("-")) == 3 for i in ids)


def test_atomic_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "result.json"
    atomic_write_json(target, {"a": 1})
    atomic_write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_event_log_appends_whole_lines(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    log.emit("a", n=1)
    log.emit("b", text="line\nbreak ünïcode")
    log.close()
    log2 = EventLog(tmp_path / "events.jsonl")  # a resumed run appends
    log2.emit("c")
    log2.close()
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["type"] for e in events] == ["a", "b", "c"]
    assert events[1]["text"] == "line\nbreak ünïcode"
    assert all(isinstance(e["ts"], float) for e in events)


WRITER = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from orkeon_run.events import EventLog
    from orkeon_run.jsonio import atomic_write_json
    d = Path(sys.argv[1])
    log = EventLog(d / "events.jsonl")
    def spam(tag):
        i = 0
        while True:
            log.emit("tick", tag=tag, i=i, pad="x" * (i % 5000))
            i += 1
    for t in range(3):
        threading.Thread(target=spam, args=(t,), daemon=True).start()
    n = 0
    print("ready", flush=True)
    while True:
        atomic_write_json(d / "result.json", {"n": n, "pad": "y" * 100000})
        n += 1
    """
)


def test_sigkill_mid_run_leaves_every_line_parseable(tmp_path):
    """A run killed with SIGKILL leaves every finished event line parseable and result.json
    whole (old or new, never torn)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    # Killed once it has written a hundred lines and more and a result, however long that
    # takes.
    events, result = tmp_path / "events.jsonl", tmp_path / "result.json"
    while not (result.is_file() and events.is_file() and events.read_bytes().count(b"\n") > 100):
        assert proc.poll() is None
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()  # SIGKILL cannot be ignored: awaited, the suite's time-out guards it
    raw = (tmp_path / "events.jsonl").read_bytes()
    lines = raw.split(b"\n")
    finished, tail = lines[:-1], lines[-1]
    assert len(finished) > 100
    for line in finished:
        json.loads(line)
    assert tail == b"", "a write() of one line is whole: nothing after the last newline"
    assert json.loads((tmp_path / "result.json").read_text())["n"] >= 0
