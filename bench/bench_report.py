"""`orkeon report` on a long run: 10,000 tool calls (one role, a scripted model asking for
10 `file_read` calls a turn, every fifth call refused by the gate).

Each format is one `orkeon report RUN_DIR --format F -o FILE` process, the median of
REPEAT, against reading the same events.jsonl with `json.loads` line by line in a fresh
interpreter (the least any report of these events can cost, start-up included). Targets:
every format under TARGET_S seconds; the Markdown within the size a GitHub comment holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from .common import PY, command_seconds, header, row

CALLS = 10_000
PER_TURN = 10
REPEAT = 3
TARGET_S = 5.0
COMMENT_LIMIT = 65_536

BASELINE = """
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    events = [json.loads(line) for line in f if line.strip()]
"""


def make_run(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n" * 20)
    read = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
    refused = {"tool": "file_write", "input": {"file_path": "secret/x", "content": ""}}
    turn = [read] * (PER_TURN - 2) + [refused, read]
    script = {"b1/r": [{"tool_calls": turn} for _ in range(CALLS // PER_TURN)]}
    (tmp / "script.json").write_text(json.dumps(script))
    plan = {
        "batches": [{"name": "b1", "roles": [{"name": "r", "roots": ["src/"], "task": "read"}]}]
    }
    doc = {
        "model": {"provider": "scripted", "script": str(tmp / "script.json")},
        "plan": plan,
        "gate": {"deny": ["Write(secret/**)"]},
        "budget": {"seconds": 3600},
    }
    rd = tmp / "run"
    env = {**os.environ, "ORKEON_CONFIG_DIR": str(tmp / "config"), "ORKEON_LOG_LEVEL": "error"}
    subprocess.run(
        [PY, "-m", "orkeon_run", "run", "dev-batches", "--inputs", json.dumps(doc),
         "--workspace", str(ws), "--run-dir", str(rd), "--output", "json", "--progress", "none"],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return rd


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rd = make_run(tmp)
        events = rd / "events.jsonl"
        header()
        base = command_seconds([PY, "-c", BASELINE, str(events)], REPEAT)
        size = events.stat().st_size / 1e6
        row(
            f"read events.jsonl ({CALLS:,} calls, {size:.1f} MB)",
            f"{base:.2f} s",
            "",
            None,
            "",
            None,
        )
        for fmt in ("md", "html", "junit", "json"):
            out = tmp / f"report.{fmt}"
            argv = [PY, "-m", "orkeon_run", "report", str(rd), "--format", fmt, "-o", str(out)]
            took = command_seconds(argv, REPEAT)
            row(f"report --format {fmt}", f"{took:.2f} s", f"{base:.2f} s", took / base,
                f"< {TARGET_S:.0f} s", took < TARGET_S)  # fmt: skip
            chars = len(out.read_text(encoding="utf-8"))
            if fmt == "md":
                row(
                    "  its size",
                    f"{chars:,} ch",
                    "",
                    None,
                    f"< {COMMENT_LIMIT:,} ch",
                    chars < COMMENT_LIMIT,
                )
            else:
                row("  its size", f"{chars / 1e3:,.0f} kB", "", None, "", None)


if __name__ == "__main__":
    main()
