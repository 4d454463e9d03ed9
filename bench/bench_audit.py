"""The audit's own cost per batch (issue 11 item 3): a snapshot when the batch begins and
the comparison after it (the role's 20 changed and 20 new files written between them, not
timed), on a git workspace of 2,000 tracked files; then the same with an untracked nested
repository of 500 files in it, which the audit now walks file by file.

Measured in the same run, alternating: the audit's git unconfined (its switches only, as
with `"sandbox": "off"`) and in its sandbox (the default), against the baseline of the
git commands such an audit needs run bare (`git status`, `git ls-files` twice,
`git rev-parse`, each twice). Target: the sandboxed audit under 1 s (a batch's roles take
minutes); the ratios are for information. Run against an older orkeon (without
`tools=`), the same script measures the audit as it was.

Two costs of issue 21: the second comparison after each of the audit's build and test
(against the batch's start, the roles' 40 changes in place), against the audit's own
first look (snapshot and comparison); and the digest check before each hook (the files a
hook's command names hashed again: a 4 KB script), against starting the hook's
program (`true`), the least a hook costs.
"""

from __future__ import annotations

import inspect
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orkeon_run.run import audit

from .common import header, row

ROUNDS = 15
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=GIT_ENV)


def workspace(root: Path, nested: bool) -> Path:
    ws = root / ("nested" if nested else "flat")
    for i in range(2000):
        path = ws / f"pkg{i % 40}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"value = {i}\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    if not nested:
        return ws.resolve()
    lib = ws / "vendor" / "lib"
    for i in range(500):
        (lib / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (lib / f"d{i % 10}" / f"f{i}.txt").write_text(f"{i}\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    return ws.resolve()


def change(ws: Path, n: int) -> None:
    for i in range(20):
        (ws / f"pkg{i}" / f"m{i}.py").write_text(f"value = {i} + {n}\n")
        (ws / f"pkg{i}" / f"new{i}.py").write_text(f"{n}\n")


def bare_git(ws: Path) -> None:
    for _ in range(2):
        for args in (["status", "--porcelain", "-z", "--untracked-files=all"],
                     ["ls-files", "-z", "-v"], ["ls-files", "-z", "--others", "--ignored",
                     "--exclude-standard", "--directory"], ["rev-parse", "HEAD"]):  # fmt: skip
            subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


def audit_once(ws: Path, tools: object) -> Callable[[], float]:
    """One audit of a batch; the seconds it took (the role's writes not counted)."""
    kw = {"tools": tools} if tools is not None else {}
    compare = getattr(audit, "compare", None)

    def once() -> float:
        start = time.perf_counter()
        before = audit.snapshot(ws, **kw)  # type: ignore[arg-type]
        took = time.perf_counter() - start
        change(ws, time.monotonic_ns())
        start = time.perf_counter()
        if compare is not None:
            changed, _ = compare(ws, before, **kw)
        else:  # an older orkeon: two passes
            changed = audit.changed_paths(ws, before)
            audit.tampered(ws, before)
        took += time.perf_counter() - start
        assert len(changed) == 40, changed
        return took

    return once


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return once


def main() -> None:
    new = "tools" in inspect.signature(audit.snapshot).parameters
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="orkeon-bench-audit-") as tmp:
        flat, nested = workspace(Path(tmp), False), workspace(Path(tmp), True)
        runs: dict[str, Callable[[], float]] = {"bare": timed(lambda: bare_git(flat))}
        for name, ws in (("flat", flat), ("nested", nested)):
            runs[f"{name} plain"] = audit_once(ws, audit.AuditGit.default(ws) if new else None)
            if new:
                from orkeon_run.tools.sandbox import SandboxPolicy, probe

                if probe().ok:
                    box = SandboxPolicy.for_git(Path("/"), run_dir=None)
                    how = audit.AuditGit(audit.AuditGit.default(ws).program, box)
                    runs[f"{name} sandboxed"] = audit_once(ws, how)
        for fn in runs.values():
            fn()  # warm: page cache, the probe
        for _ in range(ROUNDS):
            for name, fn in runs.items():
                samples.setdefault(name, []).append(fn())
        if new and hasattr(audit, "changes"):
            extra = second_comparison(flat)
            for _ in range(ROUNDS):
                samples.setdefault("second", []).append(extra())
            hook, spawn = digest_check(Path(tmp))
            samples["digest"] = [hook() for _ in range(ROUNDS * 20)]
            samples["spawn"] = [spawn() for _ in range(ROUNDS)]
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    bare = med["bare"]
    header()
    row("bare git commands (the baseline)", f"{bare:.1f} ms", "", None, "", None)
    for name, what in (("flat", "2,000 files"), ("nested", "+ a nested repository")):
        row(f"audit, {what}, git unconfined", f"{med[f'{name} plain']:.1f} ms",
            f"{bare:.1f} ms", med[f"{name} plain"] / bare, "", None)  # fmt: skip
        boxed = med.get(f"{name} sandboxed")
        if boxed is not None:
            row(f"audit, {what}, git in its sandbox", f"{boxed:.1f} ms", f"{bare:.1f} ms",
                boxed / bare, "< 1000 ms", boxed < 1000)  # fmt: skip
    if "second" in med:
        first = med["flat plain"]
        row("second comparison after build or test", f"{med['second']:.1f} ms",
            f"{first:.1f} ms", med["second"] / first, "", None)  # fmt: skip
        spawn = med["spawn"]
        row("digest check before a hook", f"{med['digest'] * 1000:.0f} us",
            f"{spawn:.2f} ms", med["digest"] / spawn, "< 0.1x", med["digest"] < spawn / 10)  # fmt: skip


def second_comparison(ws: Path) -> Callable[[], float]:
    """The comparison after the audit's build or test: the batch's start, the roles'
    changes made, then one more look at the workspace."""
    before = audit.snapshot(ws, tools=audit.AuditGit.default(ws))
    change(ws, time.monotonic_ns())
    how = audit.AuditGit.default(ws)

    def once() -> float:
        start = time.perf_counter()
        found = audit.changes(ws, before, how)
        took = time.perf_counter() - start
        assert len(found.paths) == 40 and not found.refs, found
        return took

    return once


def digest_check(root: Path) -> tuple[Callable[[], float], Callable[[], float]]:
    """The check before one hook (`Pins.changed` of its command's words), and the start of
    the cheapest hook program, `true`, through orkeon's `proc`."""
    from orkeon_run import proc
    from orkeon_run.config.inputs import MatcherGroup, SettingsCommand
    from orkeon_run.config.pins import run_pins, shell_words

    ws = root / "hooked"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "check.py").write_text("# a hook script\n" * 256)
    command = 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/check.py'
    hook = SettingsCommand(type="command", command=command)
    settings = {"PostToolUse": [MatcherGroup(hooks=[hook])]}
    pins = run_pins(ws, [], settings, [], os.environ)
    words = shell_words(command)

    def check() -> float:
        start = time.perf_counter()
        assert not pins.changed(words)
        return time.perf_counter() - start

    return check, timed(lambda: proc.run(["true"], cwd=ws, timeout=10))
