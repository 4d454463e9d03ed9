"""`orkeon run --github-comment` (docs/ci.md#live-progress-in-the-pull-request): one
comment on the pull request kept up to date while the run goes, then replaced by the run's
Markdown report (report/markdown.py).

- Where: the pull request of the event GitHub Actions started the job for
  (`GITHUB_EVENT_PATH`: `pull_request.number`, or an `issue_comment`'s issue when it is a
  pull request), in `GITHUB_REPOSITORY`, at `GITHUB_API_URL`, with `ORKEON_GITHUB_TOKEN`
  (a variable no program orkeon starts inherits). Any of them missing is an InputError
  (exit 2) before anything runs.
- One comment per run: its body starts with a hidden marker naming the run id; at start
  the pull request's comments are searched for it (a `--resume` finds its run's comment)
  and that one is edited, else one is created. Never one per update.
- While the run goes the comment shows the roles, the batches, the audits and the cost,
  rewritten at most every `interval` seconds (`ORKEON_GITHUB_COMMENT_INTERVAL`, default
  15) from a thread of its own, so the run never waits on GitHub; at the end once more,
  with the report.
- GitHub refusing or not answering is one warning, never the run's exit code."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import logs
from ..errors import InputError
from ..github_api import GitHub, GitHubError
from .fmt import money
from .markdown_text import code

DEFAULT_INTERVAL = 15.0
TOKEN_VAR = "ORKEON_GITHUB_TOKEN"
INTERVAL_VAR = "ORKEON_GITHUB_COMMENT_INTERVAL"


def marker(run_id: str) -> str:
    return f"<!-- orkeon-run: {run_id} -->"


@dataclass(frozen=True)
class Target:
    """The pull request a run's comment goes to."""

    github: GitHub
    pr: int
    interval: float


def target(environ: Mapping[str, str]) -> Target:
    """Where `--github-comment` writes; InputError naming what is missing."""
    token = environ.get(TOKEN_VAR, "")
    if not token:
        raise InputError(f"--github-comment: {TOKEN_VAR} is not set (the token that may comment on the pull request)")  # fmt: skip
    if "/" not in environ.get("GITHUB_REPOSITORY", ""):
        raise InputError("--github-comment: GITHUB_REPOSITORY is not set (OWNER/NAME)")
    raw = environ.get(INTERVAL_VAR, "")
    try:
        interval = float(raw) if raw.strip() else DEFAULT_INTERVAL
    except ValueError:
        interval = -1.0
    if not interval > 0 or interval == float("inf"):
        raise InputError(f"{INTERVAL_VAR}: {raw!r} is not a number of seconds above 0")
    return Target(GitHub.from_env(environ, token), _pull_request(environ), interval)


def _pull_request(environ: Mapping[str, str]) -> int:
    path = environ.get("GITHUB_EVENT_PATH", "")
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"--github-comment: cannot read the event (GITHUB_EVENT_PATH): {e}") from None  # fmt: skip
    pr = event.get("pull_request") if isinstance(event, dict) else None
    issue = event.get("issue") if isinstance(event, dict) else None
    if isinstance(issue, dict) and issue.get("pull_request") and pr is None:
        pr = issue
    number = pr.get("number") if isinstance(pr, dict) else None
    if not isinstance(number, int) or isinstance(number, bool):
        raise InputError("--github-comment: the event is not about a pull request (GITHUB_EVENT_PATH has no pull_request.number)")  # fmt: skip
    return number


@dataclass
class _State:
    step: str = ""
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, str] = field(default_factory=dict)
    audits: dict[str, bool] = field(default_factory=dict)
    usd: float | None = 0.0
    tokens: int = 0


class LiveComment:
    """An EventLog listener (`__call__`) that keeps the run's comment current; `finish`
    writes the report and stops. See the module docstring."""

    def __init__(self, where: Target, run_id: str, step: str) -> None:
        self.where, self.run_id = where, run_id
        self.state = _State(step=step)
        self._cond = threading.Condition()
        self._dirty = False
        self._closed = False
        self._warned = False
        self._last = 0.0
        self.comment: int | None = None
        self._open()
        self._thread = threading.Thread(target=self._loop, name="orkeon-pr-comment", daemon=True)
        self._thread.start()

    # --- the listener -----------------------------------------------------------------

    def __call__(self, e: dict[str, Any]) -> None:
        with self._cond:
            if _apply(self.state, e):
                self._dirty = True
                self._cond.notify_all()

    def close(self) -> None:
        """The runner's watchers' close: nothing; `finish` ends the comment."""

    def finish(self, report: str) -> None:
        """Stop the updates and write `report` (the run's Markdown) as the comment."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._write(f"{marker(self.run_id)}\n{report}")

    # --- writing ----------------------------------------------------------------------

    def _open(self) -> None:
        body = self._body()
        gh, pr = self.where.github, self.where.pr
        try:
            found = [
                c for c in gh.comments(pr) if str(c.get("body", "")).startswith(marker(self.run_id))
            ]
            if found and isinstance(found[0].get("id"), int):
                self.comment = found[0]["id"]
                gh.edit_comment(found[0]["id"], body)
            else:
                self.comment = gh.create_comment(pr, body)
        except GitHubError as e:
            self._warn(e)
        self._last = time.monotonic()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    due = self._last + self.where.interval - time.monotonic()
                    if self._dirty and due <= 0:
                        break
                    self._cond.wait(due if self._dirty else None)
                if self._closed:
                    return
                self._dirty = False
                body = self._body()
            self._write(body)

    def _write(self, body: str) -> None:
        gh = self.where.github
        try:
            if self.comment is None:
                self.comment = gh.create_comment(self.where.pr, body)
            else:
                gh.edit_comment(self.comment, body)
        except GitHubError as e:
            self._warn(e)
        self._last = time.monotonic()

    def _warn(self, e: GitHubError) -> None:
        if not self._warned:
            self._warned = True
            logs.warn(f"--github-comment: the pull request's comment could not be written: {e}")

    def _body(self) -> str:
        return f"{marker(self.run_id)}\n{live_body(self.state)}"


def _apply(s: _State, e: dict[str, Any]) -> bool:
    """Fold event `e` into the state; whether the comment changes."""
    kind = e.get("type")
    if kind == "role.start":
        s.roles[e["role"]] = {"status": "running", "turns": 0, "calls": 0}
    elif kind == "role.end":
        s.roles[e["role"]] = {"status": e.get("status"), "turns": e.get("turns", 0),
                              "calls": e.get("calls", 0)}  # fmt: skip
    elif kind == "tool.call" and e.get("role") in s.roles:
        s.roles[e["role"]]["calls"] += 1
    elif kind == "model.turn":
        if e.get("role") in s.roles:
            s.roles[e["role"]]["turns"] += 1
        s.tokens += int(e.get("tokens_in") or 0) + int(e.get("tokens_out") or 0)
        usd = e.get("usd")
        s.usd = None if usd is None or s.usd is None else s.usd + float(usd)
    elif kind == "batch.start":
        s.batches[e["batch"]] = "running"
    elif kind == "batch.end":
        s.batches[e["batch"]] = "passed" if e.get("passed") else "failed"
    elif kind == "batch.skipped":
        s.batches[e["batch"]] = "passed earlier"
    elif kind == "audit":
        s.audits[str(e.get("batch"))] = bool(e.get("passed"))
    else:
        return False
    return True


def live_body(s: _State) -> str:
    """The comment while the run goes: every name from the run in a code span."""
    lines = [f"### ⏳ orkeon `{s.step}`: running", ""]
    if s.batches:
        lines.append("**Batches:** " + ", ".join(f"{code(b)} {st}" for b, st in s.batches.items()))
    if s.audits:
        lines.append("**Audits:** " + ", ".join(
            f"{code(b)} {'passed' if ok else 'failed'}" for b, ok in s.audits.items()))  # fmt: skip
    cost = money(s.usd) if s.usd is not None else "unknown (a model has no price)"
    lines.append(f"**Cost so far:** {cost}, {s.tokens:,} tokens")
    if s.roles:
        lines += ["", "| role | status | turns | calls |", "| --- | --- | ---: | ---: |"]
        for name, r in s.roles.items():
            lines.append(
                f"| {code(name, table=True)} | {r['status']} | {r['turns']} | {r['calls']} |"
            )
    lines += [
        "",
        f"_Updated {time.strftime('%H:%M:%S', time.gmtime())} UTC; the full report comes at the end._",
    ]
    return "\n".join(lines) + "\n"


def final_report(run_dir: Path, result: Mapping[str, Any]) -> str:
    """The run's Markdown report, as `orkeon report` writes it; a line from the result
    when the run directory cannot be read back (its disk refused it)."""
    from .load import load
    from .markdown import markdown

    try:
        return markdown(load(run_dir))
    except (InputError, OSError, ValueError) as e:
        why = code(str(e))
        return f"### orkeon `{result.get('step')}`: {result.get('status')} (exit {result.get('exit_code')})\n\nThe report could not be read: {why}\n"
