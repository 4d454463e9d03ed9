"""The one way a test builds a pipeline: the real Pipeline as a step wires it, and a checked
call as the pipeline hands it to hooks and tools."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orkeon_run.calls import CheckedCall, Refusal
from orkeon_run.catalog import TOOLS, declared_tool
from orkeon_run.config.inputs import NativeHook
from orkeon_run.events import EventLog
from orkeon_run.hooks import NO_HOOKS, Hooks, chain
from orkeon_run.hooks.native import NativeHooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits
from orkeon_run.pipeline import Pipeline, check_call
from orkeon_run.policy.gate import Gate
from orkeon_run.policy.programs import ShellRules
from orkeon_run.policy.rules import RuleSet, call_subjects
from orkeon_run.tools import ToolEnv


def make_pipeline(
    workspace: Path,
    *,
    native: Sequence[tuple[str, str]] = (),
    hooks: Hooks = NO_HOOKS,
    gate: Gate | None = None,
    rule_sets: Sequence[RuleSet] = (),
    rules: ShellRules | None = None,
    ledger: Ledger | None = None,
    events: EventLog | None = None,
    step: str = "dev-batches",
    sandbox: Any = None,
    environ: Any = None,
) -> Pipeline:
    """The real Pipeline over `workspace` (resolved), wired as a step wires it: native hooks
    (`(event, command)` pairs) first, then `hooks` (settings-shape ones, or a test's own)."""
    rules = rules or ShellRules()
    native_set = (
        NativeHooks(
            [NativeHook(event=e, command=c) for e, c in native],  # type: ignore[arg-type]
            workspace=workspace,
            program_rules=rules,
        )
        if native
        else NO_HOOKS
    )
    return Pipeline(
        workspace=workspace,
        step=step,
        ledger=ledger or Ledger(BudgetLimits(seconds=None)),
        events=events or EventLog(None),
        tool_env=ToolEnv(workspace=workspace, shell_rules=rules, environ=environ, sandbox=sandbox),
        gate=gate or Gate(),
        rule_sets=rule_sets,
        hooks=chain([native_set, hooks]),
    )


def sample_call(workspace: Path, tool: str, input: dict[str, Any]) -> CheckedCall:
    """`input` as the pipeline hands a call of `tool` to hooks: checked when it is a valid
    call, else taken as it is (hook tests feed hooks inputs no tool would accept)."""
    if tool.startswith("mcp__"):  # the entry a run declares for an MCP server's tool
        entry = declared_tool(tool, "", {"type": "object"}, run="")
        return CheckedCall(entry, input, entry.input.model_construct(**input), None)
    checked = check_call(workspace, tool, input)
    if isinstance(checked, CheckedCall):
        return checked
    assert isinstance(checked, Refusal)
    entry = TOOLS[tool]
    raw = input.get(entry.path_field) if entry.path_field else None
    return CheckedCall(entry, input, entry.input.model_construct(**input), raw)


def subjects(
    tool: str, input: dict[str, Any], rel_path: str | None = None, is_dir: bool = False
) -> tuple[str, ...]:
    """What a pattern rule is matched against for a call of `tool` with `input`, checked as
    the pipeline checks it (a shell command split once), whose path is `rel_path`."""
    return call_subjects(sample_call(Path("/"), tool, input), rel_path, is_dir)


def refusal_lines(verdict: Any) -> list[str]:
    """The lines of a pre-tool verdict's refusal text ([] when it refuses nothing)."""
    if verdict.refusal is None:
        return []
    return re.split(r"\n(?=\[PreToolUse hook )", verdict.refusal.text)


def shell_call(pipeline: Pipeline, command: str, roots: Sequence[str] | None = None) -> Any:
    """The result of one shell call through `pipeline`, by a role with `roots`."""
    import anyio

    from orkeon_run.calls import CallContext

    ctx = CallContext(
        step=pipeline.step,
        role="b1/a" if roots is not None else "analyst",
        workspace=pipeline.workspace,
        batch="b1" if roots is not None else None,
        roots=tuple(roots) if roots is not None else None,
    )
    return anyio.run(pipeline.call, ctx, "shell", {"command": command}, "c1").result
