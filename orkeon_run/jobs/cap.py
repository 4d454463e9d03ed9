"""One cap for the whole batch (docs/scale.md, "One cap for the whole batch"): `orkeon jobs
run --max-usd/--max-tokens/--max-seconds` caps the sum over every job the process runs.

The rule, in the order things happen:

- A job starts only while every capped total has something left. What is left is the cap
  less what the finished jobs spent and less the shares the running jobs hold.
- A job that starts gets a share of what is left: `left / free`, where `free` is the
  number of places under `--concurrency` not taken by a running job (itself included).
  Its budget is the smaller of its own limit and that share (`BudgetLimits.capped`: the
  step's ledger, so a pipeline's steps share it too). So K jobs that start together get `cap / K` each.
- When a job ends, what it really spent is counted and the rest of its share goes back:
  the next job to start gets it.
- A job that cannot start because a total is spent is not run and not failed: it is
  `skipped` with `skipped: "budget"` (jobdir.py), and a later `jobs run` with more cap
  runs it.

A job's ledger stops it once its share is reached, checked between model answers, so each
running job may pass its share by at most the one model turn in flight: K concurrent jobs
overshoot the cap by at most K turns. `summary()` says by how much it did, and is written
to `OUT/_cap.json` for `jobs merge` (no job id starts with `_`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import atomic_write_json

KEYS = ("usd", "tokens", "seconds")
FLAGS = {"usd": "--max-usd", "tokens": "--max-tokens", "seconds": "--max-seconds"}
CAP_FILE = "_cap.json"


def used_of(result: Mapping[str, Any] | None) -> dict[str, float]:
    """What one job's result says it spent in this attempt, on the cap's keys (nothing for
    no result): a resumed job's `budget` is its whole run's, its `attempt` this one's,
    which is what this process's cap counts."""
    budget = (result or {}).get("budget")
    if not isinstance(budget, Mapping):
        return dict.fromkeys(KEYS, 0.0)
    if isinstance(budget.get("attempt"), Mapping):
        budget = budget["attempt"]
    return {
        "usd": float(budget.get("usd") or 0.0),
        "tokens": float((budget.get("tokens_in") or 0) + (budget.get("tokens_out") or 0)),
        "seconds": float(budget.get("used_seconds") or 0.0),
    }


@dataclass
class BatchCap:
    """The batch's caps (`limits`: only the keys given) and what the jobs spent."""

    limits: dict[str, float]
    slots: int  # --concurrency
    spent: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KEYS, 0.0))
    held: dict[str, dict[str, float]] = field(default_factory=dict)  # running job -> share
    skipped: int = 0

    def __bool__(self) -> bool:
        return bool(self.limits)

    def left(self) -> dict[str, float]:
        return {
            k: cap - self.spent[k] - sum(s[k] for s in self.held.values())
            for k, cap in self.limits.items()
        }

    def take(self, job_id: str) -> dict[str, float] | None:
        """The share job `job_id` starts with (module docstring), or None when a total is
        spent and it must not start (counted as skipped)."""
        free = max(1, self.slots - len(self.held))
        share: dict[str, float] = {}
        for key, left in self.left().items():
            part = left / free
            if key == "tokens":
                part = math.floor(part)  # a whole number of tokens, at least 1
            if part <= 0 or (key == "tokens" and part < 1):
                self.skipped += 1
                return None
            share[key] = part
        self.held[job_id] = share
        return share

    def give_back(self, job_id: str, result: Mapping[str, Any] | None) -> None:
        """Job `job_id` ended: what it spent is counted, the rest of its share is free."""
        self.held.pop(job_id, None)
        for key, value in used_of(result).items():
            self.spent[key] += value

    def summary(self) -> dict[str, Any]:
        """`{"usd": {"cap", "spent", "overshoot"}, ..., "skipped"}`: each capped total,
        what the jobs spent of it and by how much they passed it (0 when they did not)."""
        out: dict[str, Any] = {}
        for key, cap in self.limits.items():
            spent = round(self.spent[key], 6)
            out[key] = {"cap": cap, "spent": spent, "overshoot": round(max(0.0, spent - cap), 6)}
        out["skipped"] = self.skipped
        return out

    def write(self, out: Path, shard: str) -> None:
        atomic_write_json(out / CAP_FILE, {"shard": shard, **self.summary()})


def merged(found: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The caps of every shard found (`_cap.json` files) added up: spent against cap."""
    if not found:
        return None
    out: dict[str, Any] = {"shards": len(found), "skipped": 0}
    for doc in found:
        out["skipped"] += int(doc.get("skipped") or 0)
        for key in KEYS:
            part = doc.get(key)
            if isinstance(part, Mapping):
                total = out.setdefault(key, {"cap": 0.0, "spent": 0.0, "overshoot": 0.0})
                for name in ("cap", "spent", "overshoot"):
                    total[name] = round(total[name] + float(part.get(name) or 0.0), 6)
    return out


__all__ = ["CAP_FILE", "FLAGS", "KEYS", "BatchCap", "merged", "used_of"]
