"""What a step runner receives and returns.

`runner.py` builds a `StepRun` from validated inputs (run directory, ledger, events,
provider, gate, shell rules, settings-shape hooks) and calls the step's
`async run(sr: StepRun) -> StepOutcome`. The runner turns the outcome into the result
document and the exit code; a step runner never writes result.json itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .events import EventLog
from .inputs import Inputs
from .ledger import Ledger
from .vocabulary import StepStatus

if TYPE_CHECKING:
    from .agent import RoleResult
    from .gate import Gate
    from .hooks import Hooks
    from .hooks.settings import SettingsHooks
    from .models.base import Provider
    from .pipeline import Pipeline
    from .rules import RuleSet
    from .shellrules import ShellRules


@dataclass
class StepRun:
    step: str
    inputs: Inputs
    workspace: Path  # resolved
    run_dir: Path
    run_id: str
    ledger: Ledger
    events: EventLog
    provider: Provider
    gate: Gate
    shell_rules: ShellRules
    settings_hooks: SettingsHooks | None
    resume: bool = False
    # Saved state of an earlier attempt of this run (--resume): see rundir.RunDir.state.
    state: dict[str, Any] = field(default_factory=dict)
    # Every agent the step started, by role: when the step is interrupted the runner still
    # reports each role's status and counts from here.
    agents: dict[str, Any] = field(default_factory=dict)

    def transcript_path(self, role: str) -> Path:
        """`b1/api` -> RUN_DIR/transcripts/b1/api.jsonl."""
        return self.run_dir / "transcripts" / f"{role}.jsonl"

    def hooks(self) -> Hooks:
        """The step's hooks, native first, then settings-shape ones."""
        from .hooks import NO_HOOKS, chain
        from .hooks.native import NativeHooks

        native = self.inputs.native_hooks
        return chain(
            [
                NativeHooks(
                    native,
                    workspace=self.workspace,
                    program_rules=self.shell_rules,
                    env=self.child_environ(credentials=True),
                )
                if native
                else NO_HOOKS,
                self.settings_hooks or NO_HOOKS,
            ]
        )

    def pipeline(self, rule_sets: Sequence[RuleSet]) -> Pipeline:
        from .pipeline import Pipeline
        from .tools import ToolEnv

        return Pipeline(
            workspace=self.workspace,
            step=self.step,
            ledger=self.ledger,
            events=self.events,
            tool_env=ToolEnv(
                workspace=self.workspace,
                shell_rules=self.shell_rules,
                environ=self.child_environ(credentials=True),
            ),
            gate=self.gate,
            rule_sets=rule_sets,
            hooks=self.hooks(),
        )

    def child_environ(self, *, credentials: bool) -> dict[str, str]:
        """The environment of a program the step starts: never the model's key; with
        `credentials`, no credential-like variable either (the shell tool and native hooks,
        which the model steers). The audit's build and tests keep the others."""
        from .environ import scrubbed

        key = getattr(self.inputs.model, "api_key_env", None)
        return scrubbed([key] if key else [], credentials=credentials)

    def save_state(self, **changes: Any) -> None:
        """Record progress (e.g. batches that passed) so --resume can continue."""
        from .rundir import atomic_write_json

        self.state.update(changes)
        atomic_write_json(self.run_dir / "state.json", self.state)


@dataclass
class StepOutcome:
    status: StepStatus
    roles: list[RoleResult] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)
    audits: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
