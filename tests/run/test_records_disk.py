"""A full disk and a read-only workspace, for real (docs/output.md, "Exit codes"): a small
tmpfs or a read-only bind mount in a private mount namespace (`unshare -rm`), and a file
size limit (RLIMIT_FSIZE). The run ends with a result document on stdout (status "error",
the cause in words, exit 1), never `internal error`, and every line of events.jsonl and
of the transcripts whole.
"""

from __future__ import annotations

import json
import resource
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import ROOT
from kit.steps import environ, make_workspace

PLAN = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
BIG = "".join(f"line {i:05d} of a file the role reads again and again\n" for i in range(800))


def unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


# The machines this runs on allow unprivileged user and mount namespaces; one that does not
# says so here rather than failing on something else.
needs_unshare = pytest.mark.skipif(
    not unshare_works(), reason="unshare -rm (user and mount namespaces) is refused here"
)


def reads(n: int) -> dict[str, Any]:
    calls = [{"tool": "file_read", "input": {"file_path": "src/big.txt"}} for _ in range(n)]
    return {"b1/api": [{"tool_calls": calls}, {"text": "done"}]}


def inputs(tmp: Path, script: dict[str, Any]) -> Path:
    doc = {"model": {"provider": "scripted", "script": script}, "plan": PLAN}
    path = tmp / "inputs.json"
    path.write_text(json.dumps(doc))
    return path


# Not kit.process.orkeon: these runs take a preexec_fn (limits) or a shell in a private
# mount namespace in front of the command line.
def orkeon_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "orkeon_run", *args, "--progress", "none"]


def run(
    tmp: Path, argv: list[str], *, setup: str | None = None, preexec: Any = None
) -> subprocess.CompletedProcess[str]:
    """`argv` as a process; with `setup`, in a private mount namespace after those shell
    commands (mounts nobody else sees, gone with the process)."""
    env = environ(tmp)
    env["PYTHONPATH"] = str(ROOT)
    if setup is not None:
        argv = ["unshare", "-rm", "sh", "-c", f"{setup} && exec {shlex.join(argv)}"]
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=tmp, timeout=120, preexec_fn=preexec
    )


def whole_lines(path: Path) -> list[Any]:
    """Every line of a JSON-lines file, each parsed: a torn line fails here."""
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), raw[-200:]
    return [json.loads(line) for line in raw.splitlines()]


def check_error_result(
    proc: subprocess.CompletedProcess[str], rd: Path, cause: str
) -> dict[str, Any]:
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["status"], result["exit_code"]) == ("error", 1)
    assert result["error"]["kind"] == "internal", result["error"]
    assert result["error"]["message"].startswith(cause), result["error"]
    if (rd / "result.json").exists():  # written when the space a torn line freed allowed it
        assert json.loads((rd / "result.json").read_text()) == result
    return result


@needs_unshare
@pytest.mark.timeout(120)
def test_a_full_disk_ends_with_a_result_and_whole_lines(tmp_path: Path) -> None:
    """The run directory on a 256 KiB tmpfs; the role reads a 40 KB file again and again
    until its events and transcript fill it."""
    ws = make_workspace(tmp_path, {"src/big.txt": BIG})
    rd = tmp_path / "small-disk"
    rd.mkdir()
    kept = tmp_path / "kept"
    argv = orkeon_argv("run", "dev-batches", "--inputs", f"@{inputs(tmp_path, reads(40))}",
                       "--workspace", str(ws), "--run-dir", str(rd), "--output", "json")  # fmt: skip
    # The mount goes with the namespace: the records are copied out before it ends.
    setup = f"mount -t tmpfs -o size=256k tmpfs {shlex.quote(str(rd))}"
    body = f"{shlex.join(argv)}; code=$?; cp -a {shlex.quote(str(rd))} {shlex.quote(str(kept))}"
    proc = run(tmp_path, ["sh", "-c", f"{body}; exit $code"], setup=setup)
    result = check_error_result(proc, kept, "no space left on device while writing ")
    written = result["error"]["message"].removeprefix("no space left on device while writing ")
    assert written in (str(rd / "events.jsonl"), str(rd / "transcripts" / "b1" / "api.jsonl"))
    events = whole_lines(kept / "events.jsonl")
    assert events[0]["type"] == "run.start"
    assert 0 < [e["type"] for e in events].count("tool.call") < 40  # stopped at the full disk
    assert whole_lines(kept / "transcripts" / "b1" / "api.jsonl")[0]["role"] == "system"
    (role,) = result["roles"]
    assert (role["name"], role["status"]) == ("b1/api", "failed")
    assert role["error"] == result["error"]["message"]


@needs_unshare
@pytest.mark.timeout(60)
@pytest.mark.parametrize("output", ["json", "stream-json"])
def test_a_read_only_workspace_ends_with_a_result(tmp_path: Path, output: str) -> None:
    """The run directory (WORKSPACE/.orkeon/runs/ID) cannot be made: the result, on stdout
    only, says so; nothing ran."""
    ws = make_workspace(tmp_path, {"src/big.txt": "x\n"})
    argv = orkeon_argv("run", "dev-batches", "--inputs", f"@{inputs(tmp_path, reads(1))}",
                       "--workspace", str(ws), "--output", output)  # fmt: skip
    w = shlex.quote(str(ws))
    proc = run(tmp_path, argv, setup=f"mount --bind {w} {w} && mount -o remount,bind,ro {w}")
    last = proc.stdout.splitlines()[-1] if proc.stdout else "{}"
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    result = json.loads(last)
    if output == "stream-json":
        assert result.pop("type") == "result" and result.pop("ts") > 0
        assert len(proc.stdout.splitlines()) == 1
    assert (result["status"], result["exit_code"], result["roles"]) == ("error", 1, [])
    assert result["error"] == {
        "kind": "internal",
        "message": f"read-only file system while writing {ws / '.orkeon' / 'runs' / result['run_id']}",
    }
    assert not (ws / ".orkeon").exists()


@pytest.mark.timeout(60)
def test_a_file_size_limit_ends_with_a_result_and_whole_lines(tmp_path: Path) -> None:
    """RLIMIT_FSIZE (a quota of sorts): a write past it fails with EFBIG, part written; the
    line is taken back whole and the run ends in words."""
    ws = make_workspace(tmp_path, {"src/big.txt": BIG})
    rd = tmp_path / "run"
    argv = orkeon_argv("run", "dev-batches", "--inputs", f"@{inputs(tmp_path, reads(40))}",
                       "--workspace", str(ws), "--run-dir", str(rd), "--output", "json")  # fmt: skip
    limit = 300_000

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = run(tmp_path, argv, preexec=cap)
    result = check_error_result(proc, rd, "file too large while writing ")
    events = whole_lines(rd / "events.jsonl")
    whole_lines(rd / "transcripts" / "b1" / "api.jsonl")
    assert events[0]["type"] == "run.start"
    assert (rd / "events.jsonl").stat().st_size <= limit
    # events.jsonl grows fastest: its line past the limit was cut short, and taken back.
    assert result["error"]["message"] == f"file too large while writing {rd / 'events.jsonl'}"
    assert events[-1]["type"] != "result"  # nothing was written after the line that failed
