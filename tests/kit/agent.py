"""One role's agent over real parts: a workspace in tmp_path, the real Pipeline (gate,
rule sets, tools), real settings-shape hooks (kit.hooks.ans: tests/data/cc_hooks/answer.py
run as commands), a ledger, events.jsonl and the role's transcript.

The provider is the caller's: scripted, or an HTTP provider pointed at a fake server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from orkeon_run.agent.loop import Agent, RoleResult, RoleSpec
from orkeon_run.calls import CallContext
from orkeon_run.events import EventLog
from orkeon_run.hooks import NO_HOOKS, Hooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.models.base import Provider
from orkeon_run.policy.gate import Gate

from .hooks import SETTINGS
from .pipeline import make_pipeline

ALL_TOOLS = ("file_read", "file_write", "file_edit", "list_files", "search_files", "shell")


class Rig:
    def __init__(
        self,
        tmp_path: Path,
        provider: Provider,
        *,
        role: str = "b1/api",
        hooks: dict[str, Any] | None = None,
        deny: tuple[str, ...] = (),
        limits: BudgetLimits | None = None,
        tools: tuple[str, ...] = ALL_TOOLS,
    ) -> None:
        self.tmp = tmp_path
        self.workspace = (tmp_path / "ws").resolve()
        (self.workspace / "src").mkdir(parents=True, exist_ok=True)
        (self.workspace / "README.md").write_text("# readme\n")
        self.run_dir = tmp_path / "run"
        self.events_path = self.run_dir / "events.jsonl"
        self.provider = provider
        self.role = role
        self.tools = tools
        self.ledger = Ledger(limits or BudgetLimits(seconds=None))
        self.events = EventLog(self.events_path)
        self.hooks: Hooks = NO_HOOKS
        if hooks is not None:
            from orkeon_run.hooks.claude.settings import SettingsHooks

            self.hooks = SettingsHooks(
                SETTINGS.validate_python(hooks), workspace=self.workspace, events=self.events
            )
        self.pipeline = make_pipeline(
            self.workspace,
            hooks=self.hooks,
            gate=Gate(deny=deny),
            ledger=self.ledger,
            events=self.events,
        )
        batch = role.split("/")[0] if "/" in role else None
        self.transcript_path = self.run_dir / "transcripts" / f"{role}.jsonl"
        self.claude: Any = None  # a ClaudeTranscript the agent mirrors its transcript to
        self.ctx = CallContext(
            step="dev-batches",
            role=role,
            workspace=self.workspace,
            batch=batch,
            roots=("src/",) if batch else None,
            session_id=f"run-1/{role}",
            transcript_path=str(self.transcript_path),
        )

    def agent(self, *, resume: bool = False, system_prompt: str = "You build the API.") -> Agent:
        spec = RoleSpec(self.role, system_prompt, self.tools, self.ctx)
        return Agent(
            spec,
            provider=self.provider,
            pipeline=self.pipeline,
            hooks=self.hooks,
            ledger=self.ledger,
            events=self.events,
            transcript_path=self.transcript_path,
            resume=resume,
            claude_transcript=self.claude,
        )

    def run(self, *prompts: str, resume: bool = False, close: bool = True) -> list[RoleResult]:
        """Run the prompts in one session (each a `run` call), then close it."""

        async def go() -> list[RoleResult]:
            agent = self.agent(resume=resume)
            try:
                return [await agent.run(p) for p in prompts]
            finally:
                if close:
                    await agent.close()

        return anyio.run(go)

    def read_events(self, type: str | None = None) -> list[dict[str, Any]]:
        if not self.events_path.exists():
            return []
        out = [json.loads(line) for line in self.events_path.read_text().splitlines()]
        return [e for e in out if type is None or e["type"] == type]

    def transcript(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.transcript_path.read_text().splitlines()]
