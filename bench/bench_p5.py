"""Start-up against the peers and against earlier orkeons (issue 22; docs/performance.md,
"P5"): one session of N tool calls, each behind one PreToolUse hook `echo x >> LOG`,
against a loopback fake model API (bench/peers), run through this checkout's `orkeon` and
through Claude Code 2.1.332 (workload `read`) and Codex CLI 0.169.0 (workload `shell`),
paired and interleaved: every round runs every session once, the order rotated by one
each round and reversed on odd rounds; round 0 warms the caches and is dropped. Each row
is the median over rounds of the ratio of CPU time (user + sys, children included) in the
same round, which holds on a loaded machine where wall time does not.

"Children included" is what `wait4` counts: the children a process waited for. bubblewrap's
outer process never waits for its namespace's init, so the hooks in orkeon's veil and the
commands in its kept-up sandboxes are not in it. Where the bench may make cgroups (root, a
cgroup v1 `cpuacct` controller), each row is followed by the same ratio over
the whole process tree ("whole tree"), which counts them.

Rows, and their targets:

- orkeon / Claude Code at 10 and 50 calls: ≤ 0.35× and ≤ 0.2×;
- orkeon / Codex at 10 and 50 calls: ≤ 0.45× and ≤ 0.25×;
- `orkeon run` at 10 calls, scripted and Anthropic paths, against ORKEON_BENCH_BASELINE
  (the `orkeon` of an earlier checkout, commit 158902f for this round): ≤ 1.0×;
- `orkeon validate` against ORKEON_BENCH_BEFORE (the `orkeon` of the commit this round
  started from): ≤ 0.8×.

A peer or an earlier orkeon that is not installed skips its rows, saying how to install it.
ORKEON_BENCH_ROUNDS sets the rounds (default 5).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import peers
from .common import header, row

CALLS = (10, 50)


def _env_binary(var: str) -> str | None:
    given = os.environ.get(var)
    return given if given and os.access(given, os.X_OK) else None


def _validate(binary: str, more: dict[str, str] | None = None) -> peers.Timed:
    """`orkeon validate` of a small document; `more`: variables added to its environment."""
    with tempfile.TemporaryDirectory(prefix="orkeon-p5-validate-") as tmp:
        argv = [binary, "validate", "--inputs", '{"budget": {"seconds": 60}}', "--workspace", tmp]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": tmp,
            "ORKEON_CONFIG_DIR": tmp,
            **(more or {}),
        }
        timed, rc, err = peers.launch(argv, tmp, env)
    if rc != 0:
        raise RuntimeError(f"orkeon validate: exit {rc}: {err.strip()[-400:]}")
    return timed


def sessions(me: str) -> tuple[dict[str, Callable[[], peers.Timed]], list[str]]:
    """The sessions to time (by key) and the lines for the rows that are skipped."""
    todo: dict[str, Callable[[], peers.Timed]] = {}
    skipped = []

    def add(key: str, kind: str, binary: str, calls: int, workload: str) -> None:
        todo[key] = lambda: peers.session(kind, binary, calls, workload)

    for n in CALLS:
        add(f"orkeon read {n}", "orkeon", me, n, "read")
    cc, cx = peers.find("claude"), peers.find("codex")
    if cc:
        for n in CALLS:
            add(f"claude read {n}", "claude", str(cc), n, "read")
    else:
        skipped.append(f"orkeon / Claude Code: skipped, not installed: {peers.how('claude')}")
    if cx:
        for n in CALLS:
            add(f"orkeon shell {n}", "orkeon", me, n, "shell")
            add(f"codex shell {n}", "codex", str(cx), n, "shell")
    else:
        skipped.append(f"orkeon / Codex: skipped, not installed: {peers.how('codex')}")
    base = _env_binary("ORKEON_BENCH_BASELINE")
    if base:
        add("orkeon scripted 10", "orkeon", me, 10, "scripted")
        add("baseline scripted 10", "orkeon", base, 10, "scripted")
        add("baseline read 10", "orkeon", base, 10, "read")
    else:
        skipped.append(
            "orkeon run / baseline: skipped: set ORKEON_BENCH_BASELINE to the orkeon of an "
            "earlier checkout (git worktree add ../base 158902f && make -C ../base install)"
        )
    before = _env_binary("ORKEON_BENCH_BEFORE")
    if before:
        todo["validate now"] = lambda: _validate(me)
        todo["validate before"] = lambda: _validate(before)
    else:
        skipped.append("orkeon validate / before: skipped: set ORKEON_BENCH_BEFORE to an orkeon")
    return todo, skipped


def timed_rounds(
    todo: dict[str, Callable[[], peers.Timed]], rounds: int
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """CPU seconds of every session, per round (round 0 dropped): as wait4 counts them, and
    over the whole process tree (rounds where the cgroup could be made for every session)."""
    keys = list(todo)
    out, trees = [], []
    for r in range(rounds + 1):
        i = r % len(keys)
        order = keys[i:] + keys[:i]
        if r % 2:
            order.reverse()
        timed = {key: todo[key]() for key in order}
        if r:
            out.append({k: t.cpu for k, t in timed.items()})
            if all(t.tree is not None for t in timed.values()):
                trees.append({k: t.tree for k, t in timed.items() if t.tree is not None})
    return out, trees


def ratio(rounds: list[dict[str, float]], a: str, b: str) -> float | None:
    if not rounds or a not in rounds[0] or b not in rounds[0]:
        return None
    return statistics.median(r[a] / r[b] for r in rounds)


ROWS = [  # name, numerator, denominator, target
    ("P5, 10 calls: orkeon / Claude Code (CPU)", "orkeon read 10", "claude read 10", 0.35),
    ("P5, 50 calls: orkeon / Claude Code (CPU)", "orkeon read 50", "claude read 50", 0.2),
    ("P5, 10 calls: orkeon / Codex (CPU)", "orkeon shell 10", "codex shell 10", 0.45),
    ("P5, 50 calls: orkeon / Codex (CPU)", "orkeon shell 50", "codex shell 50", 0.25),
    (
        "orkeon run, scripted, 10 calls / baseline (CPU)",
        "orkeon scripted 10",
        "baseline scripted 10",
        1.0,
    ),
    ("orkeon run, Anthropic, 10 calls / baseline (CPU)", "orkeon read 10", "baseline read 10", 1.0),
    ("orkeon validate / before (CPU)", "validate now", "validate before", 0.8),
]


def main() -> None:
    me = str(Path(sys.executable).parent / "orkeon")
    rounds = int(os.environ.get("ORKEON_BENCH_ROUNDS") or 5)
    todo, skipped = sessions(me)
    # Only the sessions of a row whose both sides are here (no peer, no row to time).
    wanted = {k for _, a, b, _ in ROWS if a in todo and b in todo for k in (a, b)}
    measured, trees = (
        timed_rounds({k: v for k, v in todo.items() if k in wanted}, rounds) if wanted else ([], [])
    )
    header()
    for name, a, b, target in ROWS:
        r = ratio(measured, a, b)
        if r is None:
            continue
        value = statistics.median(x[a] for x in measured)
        base = statistics.median(x[b] for x in measured)
        row(name, f"{value:.3f} s", f"{base:.3f} s", r, f"≤ {target:g}×", r <= target)
        tree = ratio(trees, a, b)
        if tree is not None:
            value = statistics.median(x[a] for x in trees)
            base = statistics.median(x[b] for x in trees)
            row("  the same, whole tree (cgroup)", f"{value:.3f} s", f"{base:.3f} s", tree,
                "info", None)  # fmt: skip
    for line in skipped:
        print(line)
    if os.environ.get("ORKEON_BENCH_JSON"):
        Path(os.environ["ORKEON_BENCH_JSON"]).write_text(
            json.dumps({"cpu": measured, "tree": trees}, indent=1)
        )
