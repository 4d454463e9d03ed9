"""Print a readable account of one orkeon run: every tool call, what refused it, the hooks
that failed, the plan checks and the audits. `summary.py RUN_DIR`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

WIDTH = 110


def short(value: object, width: int = WIDTH) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_line(ev: dict) -> list[str]:
    inp = ev["input"]
    arg = inp.get("file_path") or inp.get("path") or inp.get("command") or inp.get("pattern") or ""
    head = f"  {ev['role']:<9} {ev['tool']:<12} {short(arg, 40):<40}"
    if ev["outcome"] == "refused":
        lines = [
            f"{head} REFUSED by {ev['refused_by']}",
            f"{'':14}model reads: {short(ev['result'])}",
        ]
    else:
        lines = [f"{head} ran"]
    for hook in ev["hooks"]:
        if ev["refused_by"] == "hook":
            break  # the refusal line above already names the hook
        if hook["exit_code"] not in (0, None) or hook["timed_out"]:
            lines.append(
                f"{'':14}hook #{hook['n']} {hook['event']} exited {hook['exit_code']}: "
                f"{short(hook['first_line'], 70)}"
            )
    if ev["outcome"] == "ran" and isinstance(ev["result"], str) and "hook #" in ev["result"]:
        added = [ln for ln in ev["result"].splitlines() if ln.startswith("[post-tool hook")]
        lines += [f"{'':14}model reads, after the result: {short(a)}" for a in added]
    return lines


def main() -> int:
    run_dir = Path(sys.argv[1])
    events = run_dir / "events.jsonl"
    if not events.is_file():
        print(f"  (no events: {events})")
        return 0
    for raw in events.read_text(encoding="utf-8").splitlines():
        ev = json.loads(raw)
        kind = ev["type"]
        if kind == "tool.call":
            print("\n".join(call_line(ev)))
        elif kind == "plan.invalid":
            print(f"  plan check {ev['attempt']}: INVALID, sent back to the planner:")
            for p in ev["problems"]:
                print(f"{'':14}{short(p)}")
        elif kind == "batch.start":
            together = " (at the same time)" if len(ev["roles"]) > 1 else ""
            print(f"  -- batch {ev['batch']}: roles {', '.join(ev['roles'])}{together}")
        elif kind == "audit":
            verdict = "passed" if ev["passed"] else "FAILED"
            print(
                f"  -- audit of {ev['batch']} (changes inside the roots? build? tests?): {verdict}"
            )
            if not ev["passed"]:
                print(f"{'':14}{short(ev['output_tail'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
