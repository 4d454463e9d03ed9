"""Job folders read into rows, and rows added up into the report of `orkeon jobs merge`
(and of `orkeon jobs run`'s summary): docs/scale.md#the-report.

A row is read from the job's files only: its outcome from result.json and job.json
(jobdir.py), its counts from events.jsonl, over every attempt (a resumed job's events
file holds them all, a killed attempt's lines included):

- `calls`, `refused` and `refused_by` (the stage that refused: gate, workspace, rules,
  roots, hook, budget, and `invalid` for a call the pipeline refused as malformed):
  `tool.call` events;
- `hook_failures`: hook runs (in a `tool.call`'s `hooks`, and `hook.run` events) that
  exited non-zero, ran past their limit or could not run;
- `turns`, `tokens_in`, `tokens_out`, `usd`: `model.turn` events (`usd` null when a
  turn's price was unknown);
- `seconds`: the time charged to the job's budget: each finished attempt's
  `budget.used_seconds`, plus, for an attempt that was killed, the model, tool and hook
  time its events record.

So the totals depend only on which jobs ran and what they did, never on how the list was
split into shards; only the measured times differ from one run to the next.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..vocabulary import error_message
from .cap import CAP_FILE
from .jobdir import FINISHED, JOB_FILE, OUTCOMES, outcome, read_doc

STAGES = ("gate", "workspace", "rules", "roots", "hook", "budget", "invalid")
TOP = 5
# How deep below each DIR merge looks for job folders: DIR/ID, ARTIFACTS/NAME/ID, ...
SEARCH_DEPTH = 4


def read_job(jd: Path, job_id: str | None = None) -> dict[str, Any]:
    """The row of the job folder `jd` (a folder that does not exist: an unfinished row)."""
    record = read_doc(jd / JOB_FILE) or {}
    result = read_doc(jd / "result.json")
    row: dict[str, Any] = {
        "id": record.get("id") or job_id or jd.name,
        "step": record.get("step") or (result or {}).get("step"),
        "status": outcome(result, record),
        "exit_code": (result or {}).get("exit_code"),
        "attempts": int(record.get("attempts") or 0),
        "calls": 0,
        "refused": 0,
        "refused_by": dict.fromkeys(STAGES, 0),
        "hook_failures": 0,
        "turns": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "usd": 0.0,
        "seconds": 0.0,
        "error": _error_text(result, record),
        "dir": str(jd),
    }
    if row["status"] == "skipped":
        row["skipped"] = record.get("skipped")
        row["error"] = "not started: the batch's cap was spent (jobs run --max-*)"
    _add_events(row, jd / "events.jsonl")
    row["usd"] = None if row["usd"] is None else round(row["usd"], 6)
    row["seconds"] = round(row["seconds"], 6)
    return row


def _error_text(result: dict[str, Any] | None, record: dict[str, Any]) -> str | None:
    if result is None:
        return record.get("error")
    return error_message(result.get("error"))


def _events(path: Path) -> Iterator[dict[str, Any]]:
    try:
        f = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return
    with f:
        for line in f:
            try:
                event = json.loads(line)
            except ValueError:  # a line a kill cut short
                continue
            if isinstance(event, dict):
                yield event


def _add_events(row: dict[str, Any], path: Path) -> None:
    tail = 0.0  # time charged by the current attempt, until its result says the total
    for e in _events(path):
        kind = e.get("type")
        if kind == "tool.call":
            row["calls"] += 1
            if e.get("outcome") == "refused":
                row["refused"] += 1
                stage = e.get("refused_by") or "invalid"
                row["refused_by"][stage if stage in STAGES else "invalid"] += 1
            hooks = e.get("hooks") or []
            row["hook_failures"] += sum(1 for h in hooks if _failed(h))
            tail += _number(e.get("tool_seconds")) + _number(e.get("hook_seconds"))
        elif kind == "model.turn":
            row["turns"] += 1
            row["tokens_in"] += int(_number(e.get("tokens_in")))
            row["tokens_out"] += int(_number(e.get("tokens_out")))
            usd = e.get("usd")
            row["usd"] = None if usd is None or row["usd"] is None else row["usd"] + usd
            tail += _number(e.get("seconds"))
        elif kind == "hook.run":
            row["hook_failures"] += _failed(e)
            tail += _number(e.get("seconds"))
        elif kind == "run.start":
            row["seconds"] += tail
            tail = 0.0
        elif kind == "result":
            row["seconds"] += _number((e.get("budget") or {}).get("used_seconds"))
            tail = 0.0
    row["seconds"] += tail


def _failed(hook: Any) -> bool:
    return isinstance(hook, dict) and (hook.get("exit_code") != 0 or bool(hook.get("timed_out")))


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def find_jobs(dirs: Iterable[Path]) -> list[Path]:
    """Every job folder (one holding job.json) in or below `dirs`, at most SEARCH_DEPTH
    levels down; nothing inside a job folder (its workspace) is searched, nor hidden
    folders or links."""
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        if (folder / JOB_FILE).is_file():
            found.append(folder)
            return
        if depth == SEARCH_DEPTH:
            return
        try:
            children = sorted(os.scandir(folder), key=lambda d: d.name)
        except OSError:
            return
        for child in children:
            if child.name.startswith(".") or not child.is_dir(follow_symlinks=False):
                continue
            walk(Path(child.path), depth + 1)

    for d in dirs:
        walk(d, 0)
    return found


def find_caps(dirs: Iterable[Path]) -> list[dict[str, Any]]:
    """The batch caps (`_cap.json`, jobs/cap.py) of the shards in or below `dirs`, as
    deep as job folders are looked for; each file once."""
    found: dict[Path, dict[str, Any]] = {}
    for d in dirs:
        for depth in range(SEARCH_DEPTH):
            for path in sorted(d.glob("/".join(["*"] * depth + [CAP_FILE]))):
                doc = read_doc(path)
                if doc is not None and not any(p.name.startswith(".") for p in path.parents):
                    found.setdefault(path.resolve(), doc)
    return list(found.values())


def merge_rows(folders: Iterable[Path]) -> list[dict[str, Any]]:
    """One row per job id, sorted by id. A job found twice (the same shard's folder given
    twice, or run into two --out folders) counts once: its finished copy, else the one
    started last; each other copy is named on stderr."""
    chosen: dict[str, tuple[tuple[bool, float], dict[str, Any]]] = {}
    seen: set[Path] = set()
    for jd in folders:
        real = jd.resolve()
        if real in seen:
            continue
        seen.add(real)
        row = read_job(jd)
        started = (read_doc(jd / JOB_FILE) or {}).get("started")
        rank = (row["status"] in FINISHED, _number(started))
        earlier = chosen.get(row["id"])
        if earlier is not None:
            kept, dropped = (row, earlier[1]) if rank > earlier[0] else (earlier[1], row)
            sys.stderr.write(
                f"orkeon: job {row['id']} found twice: using {kept['dir']}, not {dropped['dir']}\n"
            )
            if rank <= earlier[0]:
                continue
        chosen[row["id"]] = (rank, row)
    return [chosen[k][1] for k in sorted(chosen)]


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals over `rows`, the slowest and most expensive jobs, and the rows."""
    jobs = {"total": len(rows), **dict.fromkeys(OUTCOMES, 0)}
    refused_by = dict.fromkeys(STAGES, 0)
    for row in rows:
        jobs[row["status"]] += 1
        for stage, n in row["refused_by"].items():
            refused_by[stage] += n
    known = [r["usd"] for r in rows if r["usd"] is not None]
    slowest = sorted(rows, key=lambda r: (-r["seconds"], r["id"]))[:TOP]
    costly = sorted(
        rows, key=lambda r: (-(r["usd"] or 0.0), -(r["tokens_in"] + r["tokens_out"]), r["id"])
    )[:TOP]
    return {
        "jobs": jobs,
        "calls": sum(r["calls"] for r in rows),
        "refused": sum(r["refused"] for r in rows),
        "refused_by": refused_by,
        "hook_failures": sum(r["hook_failures"] for r in rows),
        "turns": sum(r["turns"] for r in rows),
        "tokens_in": sum(r["tokens_in"] for r in rows),
        "tokens_out": sum(r["tokens_out"] for r in rows),
        "usd": round(sum(known), 6),
        "usd_unknown": len(rows) - len(known),
        "seconds": round(sum(r["seconds"] for r in rows), 6),
        "slowest": [{"id": r["id"], "seconds": r["seconds"]} for r in slowest],
        "most_expensive": [
            {"id": r["id"], "usd": r["usd"], "tokens": r["tokens_in"] + r["tokens_out"]}
            for r in costly
        ],
        "rows": rows,
    }
