"""Logging (logs.py; docs/output.md, "Logs"): JSON lines on stderr when it is not a
terminal, written without structlog; the readable form (a terminal, FORCE_COLOR) through
structlog, imported only for the first message that passes ORKEON_LOG_LEVEL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kit.steps import environ, make_workspace, scripted, write

SPEC = scripted(
    {
        "analyst": [{"text": "ok"}],
        "writer": [{"tool_calls": [write(".orkeon/spec.md", "# Spec\n")]}],
    },
    request="add a greeting",
)
RUN = (
    "import sys; from orkeon_run.__main__ import main; "
    "rc = main(sys.argv[1:]); "
    "sys.stdout.write(json.dumps({'rc': rc, 'structlog': 'structlog' in sys.modules}))"
)


def run_dev_spec(
    tmp: Path, level: str, **more: str
) -> tuple[dict[str, object], list[dict[str, object]]]:
    ws = make_workspace(tmp, {"README.md": "# demo\n"})
    env = {k: v for k, v in environ(tmp).items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env.update(ORKEON_LOG_LEVEL=level, **more)
    argv = ["run", "dev-spec", "--workspace", str(ws), "--output", "stream-json", "--progress", "none",
            "--inputs", json.dumps(SPEC)]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", "import json; " + RUN, *argv],
        capture_output=True, text=True, env=env, cwd=tmp, timeout=60,
    )  # fmt: skip
    last = json.loads(proc.stdout.splitlines()[-1])
    if more.get("FORCE_COLOR"):
        return last, [{"line": line} for line in proc.stderr.splitlines()]
    return last, [json.loads(line) for line in proc.stderr.splitlines()]


def test_at_info_the_step_is_logged_as_json_lines(tmp_path: Path) -> None:
    """JSON lines need no structlog (which imports rich): its JSONRenderer's fields."""
    state, logged = run_dev_spec(tmp_path, "info")
    assert state == {"rc": 0, "structlog": False}
    assert list(logged[0]) == ["step", "run_id", "run_dir", "budget", "event", "level", "timestamp"]
    assert str(logged[0]["timestamp"]).endswith("Z")
    events = [(e["event"], e["level"]) for e in logged]
    assert events == [("step started", "info"), ("step ended", "info")]
    assert logged[1]["status"] == "succeeded" and logged[1]["exit_code"] == 0


def test_the_readable_form_goes_through_structlog(tmp_path: Path) -> None:
    """FORCE_COLOR: the readable, coloured form (structlog's console renderer)."""
    state, logged = run_dev_spec(tmp_path, "info", FORCE_COLOR="1")
    assert state == {"rc": 0, "structlog": True}
    assert "step started" in logged[0]["line"] and "\x1b[" in logged[0]["line"]


def test_an_exception_is_one_line_of_json(tmp_path: Path) -> None:
    """`exc_info` becomes the traceback's text in `exception`, as structlog's
    format_exc_info makes it."""
    code = (
        "from orkeon_run import logs\n"
        "try:\n    raise ValueError('bad\\nthing')\n"
        "except ValueError as exc:\n    logs.get().error('crashed', exc_info=exc, job='j')"
    )
    env = {**environ(tmp_path), "ORKEON_LOG_FORMAT": "json"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=30)  # fmt: skip
    (line,) = proc.stderr.splitlines()
    record = json.loads(line)
    assert (record["event"], record["level"], record["job"]) == ("crashed", "error", "j")
    assert record["exception"].startswith("Traceback")
    assert record["exception"].endswith("ValueError: bad\nthing")


def test_at_warning_a_quiet_run_never_imports_structlog(tmp_path: Path) -> None:
    state, logged = run_dev_spec(tmp_path, "warning")
    assert state == {"rc": 0, "structlog": False}
    assert logged == []


@pytest.mark.parametrize(
    ("level", "shown"),
    [("debug", ["d", "i", "w", "e"]), ("info", ["i", "w", "e"]), ("WARNING", ["w", "e"]),
     ("error", ["e"]), ("nonsense", ["i", "w", "e"]), ("warn", ["w", "e"]),
     ("critical", [])],
)  # fmt: skip
def test_level_filters_messages(tmp_path: Path, level: str, shown: list[str]) -> None:
    code = (
        "from orkeon_run import logs; log = logs.get('t'); "
        "log.debug('d'); log.info('i'); log.warning('w', n=1); log.error('e')"
    )
    env = {**environ(tmp_path), "ORKEON_LOG_LEVEL": level}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30
    )
    assert [json.loads(line)["event"] for line in proc.stderr.splitlines()] == shown


def test_in_ci_stderr_holds_the_progress_and_plain_warnings_only(tmp_path: Path) -> None:
    """Clean CI logs (docs/output.md, "Logs"): with stderr not a terminal and nothing
    asked, a warning or an error is one plain line and the other records go to the run
    directory's logs.jsonl, so no JSON line repeats a progress line; ORKEON_LOG_FORMAT=json
    puts every record back on stderr."""
    code = (
        "from orkeon_run import logs; log = logs.get('t')\n"
        "started = logs.to_file('logs.jsonl')\n"
        "log.info('step started', step='s'); log.warning('hooks skipped', why='untrusted')\n"
        "log.error('disk full'); logs.end_file(started); log.info('after the run')"
    )
    env = {
        k: v for k, v in environ(tmp_path).items() if k not in ("ORKEON_LOG_LEVEL", "FORCE_COLOR")
    }
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=30)  # fmt: skip
    assert proc.stderr.splitlines() == [
        "orkeon: warning: hooks skipped (why=untrusted)",
        "orkeon: error: disk full",
    ]
    kept = [json.loads(line) for line in (tmp_path / "logs.jsonl").read_text().splitlines()]
    assert [(r["event"], r["level"]) for r in kept] == [
        ("step started", "info"),
        ("hooks skipped", "warning"),
        ("disk full", "error"),
    ]
    env["ORKEON_LOG_FORMAT"] = "json"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=30)  # fmt: skip
    assert [json.loads(line)["event"] for line in proc.stderr.splitlines()] == [
        "step started",
        "hooks skipped",
        "disk full",
        "after the run",
    ]
