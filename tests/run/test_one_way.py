"""One way to write a duration, a count and an amount (docs/output.md, "How numbers are
written"): the same run's limits read the same in the plain progress, the live view, the
Markdown and HTML reports and the log lines; and the live view lists the latest refused
calls as the plain view says them (docs/output.md, "live"). A real `orkeon run` and
`orkeon report`; the live view is fed that run's events and drawn on rich's recording
console."""

from __future__ import annotations

import html
import json
import subprocess
from io import StringIO
from pathlib import Path

from kit.process import orkeon
from kit.steps import make_workspace, read_jsonl, write
from rich.console import Console

from orkeon_run.run.progress.live import LiveProgress

LIMITS = "5 min 00 s, 8 turns"  # {"seconds": 300, "turns": 8}
REFUSAL = "writer: #1 file_write docs/x.md: refused by gate: [refused by the gate: Write(docs/**)]"


def a_run(tmp: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """dev-spec on a 300 s, 8-turn budget; its writer's first write is refused by the gate
    (with a control character in the path the model wrote, to be escaped), then it writes
    the spec."""
    ws = make_workspace(tmp, {"README.md": "# demo\n"})
    script = {
        "analyst": [{"text": "nothing here"}],
        "writer": [
            {"tool_calls": [write("docs/x.md", "x")]},
            {"tool_calls": [write("docs/\x1b[2Jy.md", "y")]},
            {"tool_calls": [write(".orkeon/spec.md", "# Spec\n")]},
        ],
    }
    doc = {
        "request": "r",
        "model": {"provider": "scripted", "script": script},
        "budget": {"seconds": 300, "turns": 8},
        "gate": {"deny": ["Write(docs/**)"]},
    }
    rd = tmp / "run"
    proc = orkeon(
        "run", "dev-spec", "--workspace", str(ws), "--run-dir", str(rd),
        "--progress", "plain", "--output", "json", "--inputs", json.dumps(doc), cwd=tmp
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return rd, proc


def live_output(rd: Path, *, summary: bool) -> str:
    """The live view of the run's events (the view before the result, or its summary)."""
    view = LiveProgress(StringIO())
    events = read_jsonl(rd / "events.jsonl")
    for e in events if summary else events[:-1]:
        view.tracker.update(e)
    console = Console(file=StringIO(), width=200, no_color=True, record=True)
    console.print(view._summary() if summary else view._view(events[-1]["ts"]))
    return console.export_text()


def test_the_same_limit_reads_the_same_everywhere(tmp_path: Path) -> None:
    rd, proc = a_run(tmp_path)
    plain = proc.stderr.splitlines()
    assert plain[0].endswith(f"(budget: {LIMITS})")
    logged = [e for e in read_jsonl(rd / "logs.jsonl") if e["event"] == "step started"]
    assert [e["budget"] for e in logged] == [LIMITS]
    live = live_output(rd, summary=False)
    assert " of 5 min 00 s (0 %), 5 of 8 turns (62 %)" in live
    md = orkeon("report", str(rd), cwd=tmp_path).stdout
    assert "5 of 8 turns" in md and " charged of 5 min 00 s" in md
    page = html.unescape(orkeon("report", "--format", "html", str(rd), cwd=tmp_path).stdout)
    assert "5 of 8 turns" in page and " charged of 5 min 00 s" in page
    # The counts: one of a thing is singular wherever it is counted.
    assert any(line.startswith("analyst: succeeded: 1 turn, 0 calls, ") for line in plain)
    assert ": 2 roles, 3 calls, 2 refused" in plain[-1]


def test_the_live_view_lists_the_latest_refusals_as_the_plain_view_says_them(
    tmp_path: Path,
) -> None:
    rd, proc = a_run(tmp_path)
    assert REFUSAL in proc.stderr.splitlines()
    for shown in (live_output(rd, summary=False), live_output(rd, summary=True)):
        assert "refused: 2 of 3 calls; the latest:" in shown
        assert f"  {REFUSAL}" in shown
        # The model's escape sequence is shown escaped, on its line.
        assert "writer: #2 file_write docs/\\x1b[2Jy.md: refused by gate: " in shown
        assert "\x1b" not in shown
