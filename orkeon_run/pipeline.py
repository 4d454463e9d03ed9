"""The tool-call pipeline: the one place that decides whether a tool runs.

Every call the model makes passes `Pipeline.call`, in this order; the first stage that
refuses ends the call, and what the model reads is fixed in INTERFACE section 4:

 1. budget       a spent budget starts no call: `[refused: the step's time budget is spent]`
                 (turns/tokens/cost: `… the step's turn|token|cost budget is spent`)
 2. the call     unknown tool or bad input: a text result `error: …`; outcome "refused",
                 refused_by null (no stage refused it: it was not a call it could run)
 3. gate         the session's rules: `[refused by the gate: RULE]`
 4. workspace    the path resolves outside: `[refused: PATH is outside the workspace]`
 5. rule sets    the step's: `[refused by rule set NAME: RULE]`
 6. roots        writing tools of a role with roots, on the resolved path:
                 `[refused: PATH is outside this role's roots (ROOTS)]`
 7. native pre-tool hooks, in order (first failing one refuses, later ones do not run)
 8. settings-shape PreToolUse hooks (`ToolHooks.pre_tool`); an `updated_input` goes through
    stages 2-6 again before the tool runs (an invalid one is refused, refused_by "hook").
    Native pre-tool hooks saw the model's input; post-tool hooks see the input that ran.
    `continue: false` refuses the call (refused_by "hook") and sets `stop_role`; the model
    reads the refusal lines, or `[refused: a PreToolUse hook stopped the role: REASON]`.
 9. the tool     a tool that raises becomes `error: TOOL failed: …`, never a crash
10. native post-tool hooks, all in order; then settings-shape PostToolUse hooks

Lines added after the result, in this order: native post-tool lines, PreToolUse contexts,
PostToolUse lines. With any line, the result becomes text (`RESULT.rstrip("\\n")` + a
newline + the lines; a non-text result first as compact one-line JSON); with none it is
left exactly as the tool returned it.

Each tool run is charged to the ledger as "tool" and each native hook run as "hook", the
moment it ends; a native hook's limit is `ledger.cap(60)`, the tool's `ledger.cap(timeout)`.
Once the time budget is spent in the middle of a call, nothing more starts: a pre-tool
stage refuses with the budget text, a post-tool hook adds its `could not run` line.
Exactly one `tool.call` event is emitted per call (INTERFACE section 7); `seq` counts the
calls of each role through this pipeline, from 1.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import tools as tools_mod
from .budget import Ledger, spent_text
from .calls import CallContext, CallOutcome, HookRun, RefusedBy, result_text
from .events import EventLog
from .gate import Gate
from .hooks import ToolHooks
from .hooks.native import (
    HOOK_LIMIT,
    HookSpec,
    NativeHook,
    NativeRun,
    budget_spent,
    number,
    run_hook,
)
from .paths import PathOutside, resolve_in_workspace, within_roots
from .rules import RuleSet, call_subjects


def budget_text(which: str) -> str:
    return f"[refused: {spent_text(which)}]"


@dataclass
class _Refusal:
    by: RefusedBy | None
    text: str


class Pipeline:
    def __init__(
        self,
        *,
        workspace: Path,
        step: str,
        ledger: Ledger,
        events: EventLog,
        tool_env: tools_mod.ToolEnv,
        gate: Gate,
        rule_sets: Sequence[RuleSet],
        native_hooks: Sequence[HookSpec],
        tool_hooks: ToolHooks | None = None,
        tool_timeout: float = 600.0,
    ) -> None:
        """`workspace` must be resolved. `native_hooks` in input order (`inputs.NativeHook`
        or `hooks.native.NativeHook`); they are numbered here, from 1, across all events."""
        self.workspace = workspace
        ws = os.fspath(workspace)
        self._cut = len(ws) if ws.endswith("/") else len(ws) + 1  # of "WS/" in a resolved path
        self.step = step
        self.ledger = ledger
        self.events = events
        self.tool_env = tool_env
        self.gate = gate
        self.rule_sets = tuple(rule_sets)
        self.native_hooks = number(native_hooks)
        self._pre = tuple(h for h in self.native_hooks if h.event == "pre-tool")
        self._post = tuple(h for h in self.native_hooks if h.event == "post-tool")
        self.tool_hooks = tool_hooks
        self.tool_timeout = tool_timeout
        self._seq: dict[str, Iterator[int]] = {}

    # --- the one entry point ---------------------------------------------------------

    def _budget_refusal(self) -> _Refusal:
        """The budget stops this call: recorded in the ledger as the exhausted budget."""
        return _Refusal("budget", budget_text(self.ledger.refuse() or "seconds"))

    async def call(
        self, ctx: CallContext, tool: str, input: dict[str, Any], call_id: str
    ) -> CallOutcome:
        """Run one tool call through every stage; never raises for anything a tool or a
        native hook does. Emits the call's `tool.call` event."""
        counter = self._seq.get(ctx.role)
        if counter is None:
            counter = self._seq[ctx.role] = itertools.count(1)
        seq = next(counter)
        out = await self._call(ctx, tool, input, call_id)
        self.events.emit(
            "tool.call",
            step=self.step,
            batch=ctx.batch,
            role=ctx.role,
            seq=seq,
            tool=tool,
            input=input,
            outcome=out.outcome,
            refused_by=out.refused_by,
            result=out.result,
            hooks=[r.to_json() for r in out.hooks],
            tool_seconds=round(out.tool_seconds, 6),
            hook_seconds=round(out.hook_seconds, 6),
        )
        return out

    async def _call(
        self, ctx: CallContext, tool: str, input: dict[str, Any], call_id: str
    ) -> CallOutcome:
        runs: list[HookRun] = []

        def refused(r: _Refusal, **extra: Any) -> CallOutcome:
            hook_seconds = sum(x.seconds for x in runs)
            return CallOutcome(
                tool, input, "refused", r.by, r.text, runs, hook_seconds=hook_seconds, **extra
            )

        if self.ledger.spent():
            return refused(self._budget_refusal())

        r = self._check(ctx, tool, input)
        if r is not None:
            return refused(r)

        # Native pre-tool hooks: in order, the first that fails refuses.
        path = tools_mod.path_arg(tool, input) if self._pre or self._post else None
        for hook in self._pre:
            limit = self.ledger.cap(HOOK_LIMIT)
            if limit <= 0:
                return refused(self._budget_refusal())
            nr = await self._run_native(hook, tool, path, limit)
            runs.append(nr.run)
            if nr.line is not None:
                if nr.run.timed_out and limit < HOOK_LIMIT:
                    # The budget, not the hook's own 60 s, stopped it: the model reads the
                    # documented budget text, not a time-out the contract does not name.
                    return refused(self._budget_refusal())
                return refused(_Refusal("hook", nr.line))

        # Settings-shape PreToolUse hooks.
        context_lines: list[str] = []
        run_input = input
        if self.tool_hooks is not None:
            verdict = await self.tool_hooks.pre_tool(ctx, tool, input, call_id, self.ledger)
            runs.extend(verdict.runs)
            if verdict.stop or verdict.refusal_lines:
                text = "\n".join(verdict.refusal_lines) or (
                    "[refused: a PreToolUse hook stopped the role: "
                    f"{verdict.stop_reason or 'no reason given'}]"
                )
                return refused(
                    _Refusal("hook", text), stop_role=verdict.stop, stop_reason=verdict.stop_reason
                )
            if verdict.updated_input is not None:
                run_input = verdict.updated_input
                r = self._check(ctx, tool, run_input)
                if r is not None:
                    if r.by is None:  # the rewrite is not a valid call
                        r = _Refusal("hook", f"error: a PreToolUse hook's updatedInput: {r.text}")
                    return refused(r)
            context_lines = verdict.context_lines

        # The tool.
        timeout = self.ledger.cap(self.tool_timeout)
        if timeout <= 0:
            return refused(self._budget_refusal())
        started = time.monotonic()
        try:
            result = await tools_mod.run_tool(tool, run_input, self.tool_env, timeout, ctx.roots)
        except Exception as exc:  # a tool's bug must not end the step
            result = f"error: {tool} failed: {type(exc).__name__}: {exc}"
        tool_seconds = time.monotonic() - started
        self.ledger.charge("tool", tool_seconds)

        # Post-tool hooks: native ones, all in order, then settings-shape ones.
        lines: list[str] = []
        if self._post:
            if run_input is not input:
                path = tools_mod.path_arg(tool, run_input)
            for hook in self._post:
                limit = self.ledger.cap(HOOK_LIMIT)
                if limit <= 0:
                    nr = budget_spent(hook, tool=tool, path=path)
                else:
                    nr = await self._run_native(hook, tool, path, limit)
                    if nr.run.timed_out and limit < HOOK_LIMIT:  # cut short by the budget
                        self.ledger.refuse()
                        nr = NativeRun(nr.run, budget_spent(hook, tool=tool, path=path).line)
                runs.append(nr.run)
                if nr.line is not None:
                    lines.append(nr.line)
        lines.extend(context_lines)
        stop, stop_reason = False, None
        if self.tool_hooks is not None:
            post = await self.tool_hooks.post_tool(
                ctx, tool, run_input, result, call_id, self.ledger
            )
            runs.extend(post.runs)
            lines.extend(post.lines)
            stop, stop_reason = post.stop, post.stop_reason

        if lines:
            result = result_text(result).rstrip("\n") + "\n" + "\n".join(lines)
        return CallOutcome(
            tool,
            input,
            "ran",
            None,
            result,
            runs,
            tool_seconds=tool_seconds,
            hook_seconds=sum(x.seconds for x in runs),
            stop_role=stop,
            stop_reason=stop_reason,
        )

    # --- stages ------------------------------------------------------------------------

    def _check(self, ctx: CallContext, tool: str, input: dict[str, Any]) -> _Refusal | None:
        """Stages 2-6: the call itself, gate, workspace, rule sets, roots."""
        problem = tools_mod.check_input(tool, input)
        if problem is not None:
            return _Refusal(None, problem if problem.startswith("error:") else f"error: {problem}")

        raw = tools_mod.path_arg(tool, input)
        resolved: Path | None = None
        outside = False
        if raw == "":
            return _Refusal(
                None, f"error: {tool}: the field {tools_mod.TOOLS[tool].path_field!r} is empty"
            )
        if raw is not None:
            try:
                resolved = resolve_in_workspace(self.workspace, raw)
            except PathOutside:
                outside = True
        elif tools_mod.TOOLS[tool].path_field is not None:
            resolved = self.workspace  # an optional path left out: the whole workspace

        needs_subjects = not self.gate.empty or self.rule_sets
        subjects: tuple[str, ...] = ()
        if needs_subjects:
            rel = None
            if resolved is not None:  # inside the workspace: a slice is `paths.relative`
                rel = os.fspath(resolved)[self._cut :] or "."
            is_dir = resolved is not None and tool in ("list_files", "search_files")
            # os.path.isdir, not Path.is_dir: that raises for a name too long to exist
            # (ENAMETOOLONG), which ended the step on a model's list_files call.
            is_dir = is_dir and os.path.isdir(resolved)  # type: ignore[arg-type]
            subjects = call_subjects(tool, input, rel, is_dir)

        rule = self.gate.refusal(tool, subjects)
        if rule is not None:
            return _Refusal("gate", f"[refused by the gate: {rule}]")
        if outside:
            return _Refusal("workspace", f"[refused: {raw} is outside the workspace]")
        for rs in self.rule_sets:
            rule = rs.refusal(tool, subjects)
            if rule is not None:
                return _Refusal("rules", f"[refused by rule set {rs.name}: {rule}]")
        if (
            ctx.roots is not None
            and resolved is not None
            and tools_mod.TOOLS[tool].writes
            and not within_roots(self.workspace, resolved, ctx.roots)
        ):
            roots = ", ".join(ctx.roots)
            return _Refusal("roots", f"[refused: {raw} is outside this role's roots ({roots})]")
        return None

    async def _run_native(
        self, hook: NativeHook, tool: str, path: str | None, limit: float
    ) -> NativeRun:
        nr = await run_hook(
            hook,
            tool=tool,
            path=path,
            workspace=self.workspace,
            program_rules=self.tool_env.shell_rules,
            limit=limit,
            env=self.tool_env.environ,
        )
        self.ledger.charge("hook", nr.run.seconds)
        return nr
