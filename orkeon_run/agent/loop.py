"""The agent loop: one role's session with its model.

`Agent.run(prompt)` sends the prompt as a user message and loops: check the budget, ask
the model, count the turn, pass each tool call through the pipeline in order, send each
result back as a tool message (the provider puts it in its own tool-result form), until
the model answers without calls, a hook stops the role, or the budget ends. `run` may be
called again with a follow-up (a repair message, plan errors): the conversation goes on
and the counts accumulate. `close()` ends the session (SessionEnd hooks).

Settings-shape hooks, when given, fire as in a Claude Code session: SessionStart before
the first prompt (source "resume" when a transcript is resumed), UserPromptSubmit before
each prompt (a block or `continue: false` ends the role "stopped" with the reason; its
context, and SessionStart's for the first prompt that is sent, is appended to the
prompt as a `<hook_context>` block), Stop when the model finishes (a keep-going message
goes to the model as one more user message, at most once per prompt), PreCompact before
an automatic compaction (compaction.py), SessionEnd on close.

The role's transcript (models/transcript.py) gets a line per message sent and received.
With `resume=True` and an existing transcript, the conversation is reloaded from it (the
system prompt replaced by the current one) and goes on; calls the transcript shows
without a result get `UNFINISHED` as their result so every call stays paired.

The watchdog (`budget.idle_seconds`): a silent model, tool, hook or MCP call raises
errors.Idle; the role ends `budget_exhausted` naming it (`role.idle`), its siblings go on.

Budget: `ledger.check()` before each turn; each turn charges its model time and adds its
tokens and cost (models/pricing.py; unknown price -> usd not counted). A turn is also cut
when it would run past the time budget. With `budget.per_role` the role charges a ledger
of its own over the step's (ledger.RoleLedger), and its calls go through the pipeline with
it. A ProviderError ends the role "failed" with its one-line message and `error_kind`
"provider" (the step may then exit 4, run/steps/outcome.py). An answer cut at the output
limit, or a call whose arguments cannot be read, is answered with what went wrong instead
of being run (models/answers.py).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ..errors import BudgetExhausted, Idle, Interrupted, ProviderError
from ..events import EventLog
from ..hooks import NO_HOOKS, Hooks
from ..ledger import Ledger, RoleLedger
from ..models import answers
from ..models.base import Message, Provider, ToolSpec, Turn
from ..models.claude_transcript import ClaudeTranscript
from ..models.pricing import cost
from ..models.transcript import TranscriptWriter, load_conversation
from .meter import ContextMeter, message_chars, tools_chars
from .role import (
    RoleResult,
    RoleSpec,
    Status,
    first_line,
    specs_for,
    unanswered_calls,
    with_context,
)

if TYPE_CHECKING:
    from .compaction import Removed, Scanned

UNFINISHED = "[no result: the role stopped before this call finished]"


class Agent:
    def __init__(
        self,
        spec: RoleSpec,
        *,
        provider: Provider,
        pipeline: Any,
        hooks: Hooks = NO_HOOKS,
        ledger: Ledger,
        events: EventLog,
        transcript_path: Path,
        resume: bool = False,
        tool_specs: list[ToolSpec] | None = None,
        claude_transcript: ClaudeTranscript | None = None,
    ) -> None:
        """`pipeline` has `async call(ctx, tool, input, call_id) -> CallOutcome`; `hooks`
        are the step's (their session events fire here, their tool events in the
        pipeline). `tool_specs` overrides the specs looked up by name in the role's catalog
        (`spec.ctx.catalog`). `claude_transcript` mirrors the transcript, from the start
        (claude_transcript.py)."""
        self.spec = spec
        self.ctx = spec.ctx
        self.pipeline = pipeline
        self.hooks = hooks
        self.ledger = ledger.role()  # the step's, or the role's own over it (per_role)
        self.events = events
        self.model = provider.for_role(spec.name)
        self.price = provider.price()
        self.meter = ContextMeter(provider.context_tokens())
        self.tools = (
            list(tool_specs) if tool_specs is not None else specs_for(spec.tools, spec.ctx.catalog)
        )
        self._tools_chars = tools_chars(self.tools)
        redactor = events.redactor  # the run's secrets, out of the transcripts
        self.transcript = TranscriptWriter(transcript_path, spec.name, claude_transcript, redactor)
        self.messages: list[Message] = []
        self._scanned: Scanned | None = None  # compaction.py's, made by the first one
        self._removed: Removed | None = None
        self._chars = 0
        self.turns = 0
        self.calls = 0
        self.refused = 0
        self.final_text = ""
        self.status: Status = "succeeded"
        self.error: str | None = None
        self.error_kind: str | None = None
        self.idle: dict[str, Any] | None = None  # what the watchdog found silent
        self.first_refusal: tuple[str, str] | None = None
        self.stop_blocks_capped: int | None = None  # RoleResult.stop_blocks_capped
        self.resumed = resume and transcript_path.is_file() and transcript_path.stat().st_size > 0
        self._started = False
        self._closed = False
        self._session_context: str | None = None
        if self.resumed:
            self.messages = load_conversation(transcript_path)
            self._chars = sum(message_chars(m) for m in self.messages)
        if claude_transcript is not None:
            claude_transcript.start(self.messages)

    # --- public ------------------------------------------------------------------------

    @property
    def result(self) -> RoleResult:
        """The role's result so far (also readable after a cancelled `run`)."""
        return RoleResult(
            self.spec.name,
            self.status,
            self.turns,
            self.calls,
            self.refused,
            self.final_text,
            self.error,
            self.first_refusal,
            self.error_kind,
            self.ledger.use() if isinstance(self.ledger, RoleLedger) else None,
            self.idle,
            self.stop_blocks_capped,
        )

    async def run(self, prompt: str) -> RoleResult:
        status: Status
        error: str | None = None
        kind: str | None = None
        try:
            status, error = await self._run(prompt)
        except Idle as exc:
            status, error = "budget_exhausted", str(exc)
            self._went_idle(exc)
        except BudgetExhausted as exc:
            status = "budget_exhausted"
            if exc.whose == "role":  # the step's own budget is said by the step
                error = str(exc)
        except ProviderError as exc:
            status, error, kind = "failed", str(exc), "provider"
            await self.hooks.stop_failure(self.ctx, error, self.ledger, self.final_text)
        except Interrupted:
            status = "interrupted"
        except anyio.get_cancelled_exc_class():
            self.status, self.error, self.error_kind = "interrupted", None, None
            raise
        self.status, self.error, self.error_kind = status, error, kind
        return self.result

    def _went_idle(self, exc: Idle) -> None:
        """The watchdog ended the role: the ledger and the `role.idle` event say what was
        silent (the provider, the tool and its command, the hook, the MCP server)."""
        self.idle = dict(exc.silent)
        self.ledger.went_idle(self.idle)
        where = {"step": self.ctx.step, "batch": self.ctx.batch, "role": self.spec.name}
        self.events.emit("role.idle", **where, silent=self.idle, error=str(exc))

    async def close(self, reason: str = "other") -> None:
        """End the session: SessionEnd hooks (when the session started), then the transcript
        is closed and the role's kept-up shell sandbox ended. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._started:
                await self.hooks.session_end(self.ctx, reason, self.ledger)
        finally:
            self.transcript.close()
            end_role = getattr(self.pipeline, "end_role", None)  # a test's pipeline may lack it
            if end_role is not None:
                end_role(self.ctx)

    # --- the loop ----------------------------------------------------------------------

    async def _run(self, prompt: str) -> tuple[Status, str | None]:
        if not self._started:
            self._started = True
            self._start_conversation()
            source: Literal["startup", "resume"] = "resume" if self.resumed else "startup"
            self._session_context = await self.hooks.session_start(self.ctx, source, self.ledger)
        verdict = await self.hooks.user_prompt(self.ctx, prompt, self.ledger)
        if verdict.blocked_reason is not None:
            return "stopped", verdict.blocked_reason
        if verdict.stop:
            return "stopped", verdict.stop_reason or "a UserPromptSubmit hook stopped the role"
        text = with_context(prompt, [self._session_context, verdict.context])
        self._session_context = None
        self._pair_open_calls()
        self._add(Message("user", text))
        return await self._loop()

    async def _loop(self) -> tuple[Status, str | None]:
        stop_continued = False
        blocks = 0  # Stop hooks' blocks honoured in a row (budget.stop_blocks)
        cut = 0  # answers cut at the output limit in a row (models/answers.py)
        while True:
            self.ledger.check()
            turn = await self._ask()
            if turn.cut_at is not None:
                cut += 1
                for message in answers.after_cut(turn):
                    self._add(message)
                if cut >= answers.MAX_CUT:
                    return "failed", answers.cut_error(turn.cut_at, cut)
                continue
            cut = 0
            if not turn.tool_calls:
                self.final_text = turn.text
                keep = await self.hooks.stop(self.ctx, stop_continued, self.ledger, turn.text)
                if keep and blocks < self.ledger.limits.stop_blocks:
                    # Each continuation is one more turn, charged (ledger.check above).
                    blocks += 1
                    stop_continued = True
                    self._add(Message("user", keep))
                    continue
                if keep:
                    self.stop_blocks_capped = blocks
                    self.events.emit("hook.stop_cap", role=self.ctx.role, blocks=blocks)
                return "succeeded", None
            for call in turn.tool_calls:
                if call.error is not None:  # unreadable arguments: the model is told
                    self._add(answers.unreadable(call))
                    continue
                outcome = await self.pipeline.call(
                    self.ctx, call.name, call.input, call.id, ledger=self.ledger
                )
                self.calls += 1
                refused = outcome.outcome == "refused"
                self.refused += refused
                if refused and self.first_refusal is None:
                    stage = outcome.refused_by or "invalid"
                    self.first_refusal = (stage, first_line(outcome.text))
                self._add(
                    Message(
                        "tool",
                        outcome.text,
                        tool_call_id=call.id,
                        name=call.name,
                        is_error=refused,
                    )
                )
                if outcome.stop_role:
                    return "stopped", outcome.stop_reason or "a hook stopped the role"

    async def _ask(self) -> Turn:
        chars = self._chars + self._tools_chars
        if self.meter.over(chars):
            await self._compact(chars)
            chars = self._chars + self._tools_chars
        left = self.ledger.remaining_seconds()
        t0 = time.perf_counter()
        try:
            with anyio.move_on_after(left) as scope:
                turn = await self.model.complete(
                    self.messages,
                    self.tools,
                    self.spec.answer_schema,
                    idle=self.ledger.idle_seconds,
                )
        finally:
            seconds = time.perf_counter() - t0
            if left is not None and scope.cancelled_caught:
                seconds = max(seconds, left)  # cut at the budget: all of it is spent
            self.ledger.charge("model", seconds)
        if scope.cancelled_caught:
            self.ledger.exhaust("seconds")
        read, written = turn.cache_read_tokens, turn.cache_write_tokens
        usd = cost(self.price, turn.tokens_in, turn.tokens_out, read, written)
        self.ledger.add_turn(turn.tokens_in, turn.tokens_out, usd, read, written)
        self.turns += 1
        self.meter.report(chars, turn.tokens_in)
        usage = {"input_tokens": turn.tokens_in, "output_tokens": turn.tokens_out}
        if read or written:  # the API's names; both are parts of input_tokens here
            usage.update(cache_read_input_tokens=read, cache_creation_input_tokens=written)
        self._add(
            Message("assistant", turn.text, tuple(turn.tool_calls)),
            "received",
            model=turn.model_name or "",
            usage=usage,
            seconds=round(seconds, 6),
        )
        self.events.emit(
            "model.turn",
            step=self.ctx.step,
            batch=self.ctx.batch,
            role=self.spec.name,
            turn=self.turns,
            tokens_in=turn.tokens_in,
            tokens_out=turn.tokens_out,
            cache_read_tokens=read,
            cache_write_tokens=written,
            usd=None if usd is None else round(usd, 8),
            tool_calls=len(turn.tool_calls),
            invalid_calls=sum(c.error is not None for c in turn.tool_calls),
            cut=turn.cut_at is not None,
            seconds=round(seconds, 6),
            text=turn.text[:200],  # a stream shows what the model is doing
        )
        return turn

    async def _compact(self, chars: int) -> None:
        """Stages 1-2 (shorten old texts), then, when they are not enough, stage 3 (remove
        the oldest whole exchanges): compaction.py. PreCompact hooks fire once, before
        anything changes; nothing to do, nothing fires."""
        from . import compaction  # its models only for a conversation that outgrew TRIGGER

        need = self.meter.chars_to_drop(chars)
        scanned = replace(self._scanned or compaction.Scanned())  # kept once the edits apply
        removed = self._removed = self._removed or compaction.Removed()
        edits = compaction.plan(self.messages, need, scanned)
        shortened = sum(e.chars_dropped for e in edits)
        removal = None
        if shortened < need:
            removal = compaction.plan_removal(self.messages, need - shortened, removed, edits)
        if not edits and removal is None:
            self._scanned = scanned
            self.meter.compacted(chars)
            return
        await self.hooks.pre_compact(self.ctx, self.ledger, trigger="auto")
        before = self.meter.estimate(chars)
        # Indexes in the conversation as first sent (the transcript's messages in order).
        indexes = [removed.original(e.index) for e in edits]
        dropped = compaction.apply(self.messages, edits)
        note: dict[str, Any] = {}
        if removal is not None:
            first = removed.original(removal.start)
            note["removed"] = [first, first + removal.stop - removal.start]
            dropped += compaction.remove(self.messages, removal, removed, scanned)
            note["note"] = self.messages[removed.note].content
        self._scanned = scanned
        self._chars -= dropped
        self.meter.reset()
        after = self.meter.compacted(self._chars + self._tools_chars)
        fields = {
            "messages_compacted": len(edits),
            "messages_removed": 0 if removal is None else removal.stop - removal.start,
            "calls_removed": 0 if removal is None else removal.calls,
            "chars_dropped": dropped,
            "tokens_before": before,
            "tokens_after": after,
        }
        self.events.emit(
            "compact",
            step=self.ctx.step,
            batch=self.ctx.batch,
            role=self.spec.name,
            trigger="auto",
            **fields,
        )
        self.transcript.note("compacted", indexes=indexes, **fields, **note)

    # --- conversation ------------------------------------------------------------------

    def _add(self, message: Message, direction: str = "sent", **extra: Any) -> None:
        # As recorded: a user message (a hook's context) with the run's secrets redacted.
        message = self.transcript.message(direction, message, **extra)  # type: ignore[arg-type]
        self.messages.append(message)
        self._chars += message_chars(message)

    def _start_conversation(self) -> None:
        system = Message("system", self.spec.system_prompt)
        if not self.messages:
            self._add(system)
        elif self.messages[0].role != "system":
            self.messages.insert(0, system)
            self._chars += message_chars(system)
        elif self.messages[0].content != system.content:
            self._chars += message_chars(system) - message_chars(self.messages[0])
            self.messages[0] = system

    def _pair_open_calls(self) -> None:
        """Give every call of the last answer that has no result the UNFINISHED result
        (after a hook stopped the role mid-answer, or a resumed transcript ended there)."""
        for call in unanswered_calls(self.messages):
            self._add(Message("tool", UNFINISHED, tool_call_id=call.id, name=call.name))
