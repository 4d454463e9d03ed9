"""Helpers for the `orkeon jobs` tests and bench/bench_jobs.py: tiny scripted jobs in tiny
git workspaces (copies of one template repository), a job list beside them, and the
environment of the real `orkeon` command in a child process (kit.process.orkeon)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from . import ROOT, git, steps
from .steps import scripted, write

PLAN = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}
KINDS = ("spec", "batches", "refused", "failing", "hooked", "budget")


def template(root: Path) -> Path:
    """A git repository with a README and an empty `src/` package, one commit."""
    repo = root / "template"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("# tiny\n")
    (repo / "src" / "__init__.py").write_text("")
    git(repo, "init", "-q", "--template=")  # no sample hooks: each copy is a few files
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def inputs(kind: str, n: int) -> tuple[str, dict[str, Any]]:
    """(step, inputs) of a tiny job of `kind`, numbered `n` (its tokens vary with it)."""
    usage = {"input_tokens": 100 + n, "output_tokens": 10 + n % 7}
    spec = write(".orkeon/spec.md", f"# spec {n}\n")
    if kind == "spec":  # succeeds: the writer writes the spec
        return "dev-spec", {
            "request": "r",
            **scripted({"writer": [{"tool_calls": [spec], "usage": usage}]}),
        }
    if kind == "refused":  # succeeds, with one call refused by the gate
        turn = {"tool_calls": [write("notes/x.md", "x"), spec], "usage": usage}
        return "dev-spec", {
            "request": "r",
            "gate": {"deny": ["file_write(notes/**)"]},
            **scripted({"writer": [turn]}),
        }
    if kind == "hooked":  # succeeds; a post-tool hook that exits 1 on each call
        return "dev-spec", {
            "request": "r",
            "hooks": [{"event": "post-tool", "command": "false"}],
            **scripted({"writer": [{"tool_calls": [spec], "usage": usage}]}),
        }
    if kind == "budget":  # the analyst's one turn spends the budget: the writer cannot start
        return "dev-spec", {"request": "r", "budget": {"turns": 1}, **scripted({})}
    turn = {"tool_calls": [write("src/x.py", f"x = {n}\n")], "usage": usage}
    audit = {"test": ["false"]} if kind == "failing" else {}  # "failing": the audit fails
    return "dev-batches", {"plan": PLAN, "audit": audit, **scripted({"b1/api": [turn]})}


def make_list(
    folder: Path, count: int, kinds: tuple[str, ...] = KINDS, *, repo: Path | None = None
) -> Path:
    """`folder/jobs.jsonl` with `count` jobs cycling through `kinds`, each in its own copy
    of the template under `folder/ws/ID` (relative paths: the folder can be copied whole)."""
    folder.mkdir(parents=True, exist_ok=True)
    repo = repo or template(folder)
    lines = []
    for n in range(count):
        job_id = f"job-{n:03d}"
        shutil.copytree(repo, folder / "ws" / job_id, symlinks=True)
        step, doc = inputs(kinds[n % len(kinds)], n)
        lines.append(
            json.dumps({"id": job_id, "step": step, "workspace": f"ws/{job_id}", "inputs": doc})
        )
    path = folder / "jobs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def environ(tmp: Path, **more: str) -> dict[str, str]:
    """orkeon's environment (steps.environ) in a child: the checkout importable, only the
    per-job summary lines on stderr."""
    return steps.environ(tmp, PYTHONPATH=str(ROOT), ORKEON_LOG_LEVEL="warning", **more)
