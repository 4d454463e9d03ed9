"""The tool-call pipeline: the one place that decides whether a tool runs.

Every call the model makes passes `Pipeline.call`, in this order; the first stage that
refuses ends the call, and what the model reads is fixed (docs/hooks.md, docs/tools.md):

 1. budget       a spent budget starts no call: `[refused: the step's time budget is spent]`
                 (turns/tokens/cost: `… the step's turn|token|cost budget is spent`)
 2. the call     unknown tool or bad input: a text result `error: …`; outcome "refused",
                 refused_by null (no stage refused it: it was not a call it could run).
                 A tool that cannot run here now (`calls.Catalog.unavailable`: the shell
                 where no sandbox can be made, `[refused: the shell sandbox is not
                 available here: REASON]`; a tool of an MCP server the role named that is
                 not running) is refused the same way, with the catalog's text. The path
                 argument is resolved here, once, and a command (the catalog's
                 `command_field`: the shell's) split into words, once: every later stage,
                 the hooks and the tool act on that resolution and those words.
 3. gate         the session's rules: `[refused by the gate: RULE]`
 4. workspace    the path resolves outside: `[refused: PATH is outside the workspace]`
 5. rule sets    the step's: `[refused by rule set NAME: RULE]` (a program check's RULE is
                 `CHECK: WHY`, policy/progchecks.py)
 6. roots        writing tools of a role with roots, on the resolved path:
                 `[refused: PATH is outside this role's roots (ROOTS)]`
 7. pre-tool hooks (`hooks.Hooks.pre_tool`: native ones, then settings-shape ones); an
    `updated_input` goes through stages 2-6 again before the tool runs (an invalid one is
    refused, refused_by "hook"). A refusal may also stop the role (`stop_role`).
 8. the tool     a tool that raises becomes `error: TOOL failed: …`, never a crash (an
                 MCP tool is its server's, called through the run's hub: tools/mcp/tool.py);
                 the shell tool's environment gets the session's hook changes
                 (`Hooks.session_env`: SessionStart's CLAUDE_ENV_FILE)
 9. post-tool hooks (`hooks.Hooks.post_tool`), on the input that ran.

What the model reads (the result, a refusal's text) has the run's secrets redacted
(`events.redactor`, environ.Redactor), and so has the call's event.

With any line the hooks add, the result becomes text (`RESULT.rstrip("\\n")` + a newline +
the lines; a non-text result first as compact one-line JSON); with none it is left exactly
as the tool returned it.

The tool's run is charged to the ledger as "tool" the moment it ends (hooks charge their
own); its limit is `ledger.cap(tool_timeout)`. Exactly one `tool.call` event is emitted per
call (docs/output.md); `seq` counts the calls of each role through this pipeline, from 1. A `tool.start` event
is emitted as a call begins.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import catalog
from .calls import (
    BUILTINS,
    CallContext,
    CallOutcome,
    Catalog,
    CheckedCall,
    HookRun,
    Refusal,
    budget_refusal,
    result_text,
)
from .events import EventLog
from .hooks import NO_HOOKS, Hooks
from .ledger import Ledger
from .policy.gate import Gate
from .policy.paths import PathOutside, resolve_in_workspace, within_roots
from .policy.rules import RuleSet, call_subjects
from .policy.words import CommandRefused, split_command
from .tools import ToolEnv, run_tool


def check_call(
    workspace: Path, tool: str, input: Any, tools: Catalog = BUILTINS
) -> CheckedCall | Refusal:
    """Stage 2, the call itself: a tool that can run here now and that the calling role's
    catalog `tools` holds, an input its model accepts, the path argument resolved once inside
    `workspace` (resolved) and a command split into words once (`CheckedCall.words`). A
    path that resolves outside is marked, not refused: the gate comes first; a command that
    cannot be split is marked too (`unsplit`), and the tool answers it."""
    unavailable = tools.unavailable(tool)
    if unavailable is not None:
        return Refusal(None, unavailable)
    entry = tools.get(tool)
    if entry is None:
        return Refusal(None, f"error: there is no tool named {tool!r}")
    args = entry.parse(input)
    if isinstance(args, str):
        return Refusal(None, f"error: {args}")
    raw = getattr(args, entry.path_field) if entry.path_field else None
    if raw == "":
        return Refusal(None, f"error: {tool}: the field {entry.path_field!r} is empty")
    path: Path | None = None
    outside = False
    if raw is not None:
        try:
            path = resolve_in_workspace(workspace, raw)
        except PathOutside:
            outside = True
    elif entry.path_field is not None:
        path = workspace  # an optional path left out: the whole workspace
    words, unsplit = _split(entry, args)
    return CheckedCall(entry, input, args, raw, path, outside, words, unsplit)


def _split(
    entry: catalog.Tool, args: catalog.ToolInput
) -> tuple[tuple[str, ...] | None, str | None]:
    """The command of a tool with a command field split into words, here and only here:
    (words, None), or (None, why it cannot be split: the tool answers with that)."""
    if entry.command_field is None:
        return None, None
    command = getattr(args, entry.command_field)
    try:
        return tuple(split_command(command)), None
    except CommandRefused as exc:
        return None, str(exc)


def _changed(
    environ: Mapping[str, str] | None, changes: Mapping[str, str | None]
) -> dict[str, str]:
    """The shell tool's environment with the session's hook changes applied (None removes
    a name). Without an environment of its own, the tool's is orkeon's, scrubbed."""
    from .environ import scrubbed

    out = dict(environ) if environ is not None else scrubbed()
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def call_target(tool: str, input: Any) -> str | None:
    """What a call acts on, for a `tool.start` event: its path as the model wrote it, or
    the shell command's first line; at most 200 characters; None when there is none."""
    if not isinstance(input, dict):
        return None
    entry = catalog.TOOLS.get(tool)
    field = (entry.command_field or entry.path_field) if entry is not None else None
    value = input.get(field) if field else None
    if not isinstance(value, str):
        return None
    return value.strip().partition("\n")[0][:200]


class Pipeline:
    def __init__(
        self,
        *,
        workspace: Path,
        step: str,
        ledger: Ledger,
        events: EventLog,
        tool_env: ToolEnv,
        gate: Gate,
        rule_sets: Sequence[RuleSet] = (),
        hooks: Hooks = NO_HOOKS,
        tool_timeout: float = 600.0,
    ) -> None:
        """`workspace` must be resolved."""
        self.workspace = workspace
        ws = os.fspath(workspace)
        self._cut = len(ws) if ws.endswith("/") else len(ws) + 1  # of "WS/" in a resolved path
        self.step = step
        self.ledger = ledger
        self.events = events
        self.tool_env = tool_env
        self.gate = gate
        self.rule_sets = tuple(rule_sets)
        self.hooks = hooks
        self.tool_timeout = tool_timeout
        self._seq: dict[str, Iterator[int]] = {}

    async def call(
        self,
        ctx: CallContext,
        tool: str,
        input: dict[str, Any],
        call_id: str,
        ledger: Ledger | None = None,
    ) -> CallOutcome:
        """Run one tool call through every stage; never raises for anything a tool or a
        hook does. Emits the call's `tool.call` event. `ledger`: the calling role's, when
        it has limits of its own (ledger.RoleLedger); else the step's."""
        counter = self._seq.get(ctx.role)
        if counter is None:
            counter = self._seq[ctx.role] = itertools.count(1)
        seq = next(counter)
        self.events.emit(
            "tool.start",
            step=self.step,
            batch=ctx.batch,
            role=ctx.role,
            seq=seq,
            tool=tool,
            target=call_target(tool, input),
        )
        out = await self._call(ctx, tool, input, call_id, ledger or self.ledger)
        if self.events.redactor is not None:
            # What the model reads: a command that printed a secret, a hook that echoed
            # one, gets it as `[redacted]` (environ.Redactor).
            out.result = self.events.redactor.value(out.result)
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
        self, ctx: CallContext, tool: str, input: dict[str, Any], call_id: str, ledger: Ledger
    ) -> CallOutcome:
        runs: list[HookRun] = []

        def refused(r: Refusal, **extra: Any) -> CallOutcome:
            hook_seconds = sum(x.seconds for x in runs)
            return CallOutcome(
                tool, input, "refused", r.by, r.text, runs, hook_seconds=hook_seconds, **extra
            )

        if ledger.spent():
            return refused(budget_refusal(ledger))
        call = self._check(ctx, tool, input)
        if isinstance(call, Refusal):
            return refused(call)

        pre = await self.hooks.pre_tool(ctx, call, call_id, ledger)
        runs.extend(pre.runs)
        if pre.refusal is not None:
            return refused(pre.refusal, stop_role=pre.stop, stop_reason=pre.stop_reason)
        if pre.updated_input is not None:
            rewritten = self._check(ctx, tool, pre.updated_input)
            if isinstance(rewritten, Refusal):
                if rewritten.by is None:  # the rewrite is not a valid call
                    rewritten = Refusal(
                        "hook", f"error: a PreToolUse hook's updatedInput: {rewritten.text}"
                    )
                return refused(rewritten)
            call = rewritten

        timeout = ledger.cap(self.tool_timeout)
        if timeout <= 0:
            return refused(budget_refusal(ledger))
        started = time.monotonic()
        try:
            env = self.tool_env if ctx.roots is None else replace(self.tool_env, roots=ctx.roots)
            changes = self.hooks.session_env(ctx)
            if changes:
                env = replace(env, environ=_changed(env.environ, changes))
            result = await run_tool(call, env, timeout)
        except Exception as exc:  # a tool's bug must not end the step
            result = f"error: {tool} failed: {type(exc).__name__}: {exc}"
        tool_seconds = time.monotonic() - started
        ledger.charge("tool", tool_seconds)

        post = await self.hooks.post_tool(ctx, call, result, call_id, ledger, pre)
        runs.extend(post.runs)
        if post.lines:
            result = result_text(result).rstrip("\n") + "\n" + "\n".join(post.lines)
        return CallOutcome(
            tool,
            input,
            "ran",
            None,
            result,
            runs,
            tool_seconds=tool_seconds,
            hook_seconds=sum(x.seconds for x in runs),
            stop_role=post.stop,
            stop_reason=post.stop_reason,
        )

    # --- stages 2-6 ----------------------------------------------------------------------

    def _police(self, ctx: CallContext, call: CheckedCall) -> Refusal | None:
        """Stages 3-6: gate, workspace, rule sets, roots, on the call as checked."""
        tool, resolved = call.name, call.path
        subjects: tuple[str, ...] = ()
        if not self.gate.empty or self.rule_sets:
            rel = None
            if resolved is not None:  # inside the workspace: a slice is `paths.relative`
                rel = os.fspath(resolved)[self._cut :] or "."
            # os.path.isdir, not Path.is_dir: that raises for a name too long to exist
            # (ENAMETOOLONG), which ended the step on a model's list_files call.
            is_dir = resolved is not None and call.tool.folder and os.path.isdir(resolved)
            subjects = call_subjects(call, rel, is_dir)

        rule = self.gate.refusal(tool, subjects)
        if rule is not None:
            return Refusal("gate", f"[refused by the gate: {rule}]")
        if call.outside:
            return Refusal("workspace", f"[refused: {call.raw_path} is outside the workspace]")
        for rs in self.rule_sets:
            rule = rs.refusal(tool, subjects, call.words)
            if rule is not None:
                return Refusal("rules", f"[refused by rule set {rs.name}: {rule}]")
        if (
            ctx.roots is not None
            and resolved is not None
            and call.tool.writes
            and not within_roots(self.workspace, resolved, ctx.roots)
        ):
            roots = ", ".join(ctx.roots)
            return Refusal(
                "roots", f"[refused: {call.raw_path} is outside this role's roots ({roots})]"
            )
        return None

    def _check(self, ctx: CallContext, tool: str, input: Any) -> CheckedCall | Refusal:
        """Stages 2-6 on one input: the call itself, then `_police`."""
        call = check_call(self.workspace, tool, input, ctx.catalog)
        if isinstance(call, Refusal):
            return call
        return self._police(ctx, call) or call
