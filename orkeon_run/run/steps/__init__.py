"""The step registry: each step's name and the module that runs it.

A step module defines:

- `ROLES`: the roles its crew must have (`crews/STEP.toml`);
- `check(inputs, workspace, pinned, sources)`: the checks its inputs need before anything
  runs (raises InputError naming the field); returns `(plan, plan_rel)` for a step that
  runs a plan (`pinned`, the plan a resumed run pinned, when given), else None; `sources`
  (config/sources.py) says which of the workspace's own files it may read;
- `async run(sr) -> StepOutcome`;
- optionally `default_budget(crews) -> BudgetLimits`, for a step with no crew of its own
  that runs other steps (`pipeline`): its budget when the inputs give none (`crews`: the
  workspace whose crews count, `Sources.crews`; None: the built-in ones).

Adding a step is one module here, one line in `STEPS` and its crew in `crews/STEP.toml`
(docs/architecture.md). `STEPS` is the one list of steps: the command line's STEP, the
result document's `step`, the crews' `step` and the jobs lists' read it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...errors import UsageError

if TYPE_CHECKING:
    from ...config.inputs import Inputs, Plan
    from ...config.sources import Sources
    from ..context import StepOutcome, StepRun

STEPS: dict[str, str] = {
    "dev-spec": "spec",
    "dev-plan": "plan",
    "dev-batches": "batches",
    "tasks-repair": "repair",
    "pipeline": "chain",
    "task": "task",
    "review": "review",
}


class StepModule(Protocol):
    ROLES: tuple[str, ...]

    def check(
        self,
        inputs: Inputs,
        workspace: Path,
        pinned: tuple[Plan, str] | None = None,
        sources: Sources | None = None,
    ) -> tuple[Plan, str] | None: ...

    async def run(self, sr: StepRun) -> StepOutcome: ...


def unknown_step(name: object) -> str:
    """What a name that is no step reads: the steps, and where one is added."""
    return (
        f"unknown step {name!r} (one of: {', '.join(STEPS)}; a step is registered in "
        "orkeon_run/run/steps/__init__.py)"
    )


def step_module(name: str) -> StepModule:
    """The module of step `name`; UsageError for a name that is no step."""
    module = STEPS.get(name)
    if module is None:
        raise UsageError(f"STEP: {unknown_step(name)}")
    found: StepModule = importlib.import_module(f".{module}", __package__)
    return found


def crew_steps() -> tuple[str, ...]:
    """The steps that run a crew of their own (`crews/STEP.toml`: their module names its
    `ROLES`); `pipeline` runs the others'."""
    return tuple(s for s in STEPS if step_module(s).ROLES)
