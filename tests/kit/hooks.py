"""Settings-shape hooks (Claude Code's contract, docs/hooks.md) driven directly: `ans`
builds the command of tests/data/cc_hooks/answer.py (prints and exits as told, records what
it read), `group` a matcher group, `Rig` a SettingsHooks over a real workspace."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import TypeAdapter

from orkeon_run.calls import CallContext
from orkeon_run.config.inputs import MatcherGroup
from orkeon_run.events import NullLog
from orkeon_run.hooks import PreToolVerdict
from orkeon_run.hooks.claude.settings import SettingsHooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits

from . import DATA
from .pipeline import sample_call

ANSWER = DATA / "cc_hooks" / "answer.py"
SETTINGS = TypeAdapter(dict[str, list[MatcherGroup]])  # a settings file's "hooks" object


def ans(
    *,
    exit: int = 0,
    stdout: Any = "",
    stderr: str = "",
    sleep: float = 0,
    record: Path | None = None,
) -> str:
    """The command of an answer.py hook; a dict for `stdout` is printed as JSON. It runs on
    this interpreter (`-S`: no site packages), which starts faster than a PATH lookup."""
    argv = [sys.executable, "-S", str(ANSWER)]
    if record is not None:
        argv += ["--record", str(record)]
    if sleep:
        argv += ["--sleep", str(sleep)]
    if not isinstance(stdout, str):
        stdout = json.dumps(stdout)
    if stdout:
        argv += ["--stdout", stdout]
    if stderr:
        argv += ["--stderr", stderr]
    if exit:
        argv += ["--exit", str(exit)]
    return shlex.join(argv)


def group(*commands: str | dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    hooks = [c if isinstance(c, dict) else {"type": "command", "command": c} for c in commands]
    g: dict[str, Any] = {"hooks": hooks}
    if matcher is not None:
        g["matcher"] = matcher
    return g


class Rig:
    """A SettingsHooks over a real workspace, with the events it emitted and a ledger."""

    def __init__(
        self,
        ws: Path,
        config: dict[str, Any],
        remove: tuple[str, ...] = (),
        provider_for: Any = None,
    ) -> None:
        """`provider_for(model)`: the provider prompt hooks ask (SettingsHooks)."""
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        log = NullLog()
        log.listeners.append(self.events.append)
        self.ledger = Ledger(BudgetLimits())
        self.hooks = SettingsHooks(
            SETTINGS.validate_python(config, strict=True),
            workspace=ws,
            events=log,
            extra_env_remove=remove,
            provider_for=provider_for,
        )
        self.ctx = CallContext(
            step="dev-batches",
            role="b1/api",
            workspace=ws,
            batch="b1",
            session_id="sess-1",
            transcript_path="/runs/r1/transcripts/b1__api.jsonl",
        )

    def pre(self, tool: str = "file_write", input: dict[str, Any] | None = None):
        data = input if input is not None else {"file_path": "src/x.py", "content": "x = 1\n"}
        call = sample_call(self.ws, tool, data)
        return anyio.run(self.hooks.pre_tool, self.ctx, call, "call-1", self.ledger)

    def post(
        self, tool: str = "file_write", input: dict[str, Any] | None = None, result: Any = "ok"
    ):
        data = input if input is not None else {"file_path": "src/x.py", "content": "x = 1\n"}
        call = sample_call(self.ws, tool, data)
        return anyio.run(
            self.hooks.post_tool, self.ctx, call, result, "call-1", self.ledger, PreToolVerdict()
        )

    def prompt(self, text: str = "build the thing"):
        return anyio.run(self.hooks.user_prompt, self.ctx, text, self.ledger)

    def start(self, source: Literal["startup", "resume"] = "startup"):
        return anyio.run(self.hooks.session_start, self.ctx, source, self.ledger)

    def stop(self, active: bool = False):
        return anyio.run(self.hooks.stop, self.ctx, active, self.ledger)

    def end(self, reason: str = "other"):
        return anyio.run(self.hooks.session_end, self.ctx, reason, self.ledger)

    def compact(self):
        return anyio.run(self.hooks.pre_compact, self.ctx, self.ledger)

    def notify(self, message: str):
        return anyio.run(self.hooks.notification, self.ctx, message, self.ledger)

    def runs(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "hook.run"]


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def payloads(path: Path) -> list[dict[str, Any]]:
    return [json.loads(r["stdin"]) for r in records(path)]
