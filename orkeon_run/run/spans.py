"""The span tree of a run, built from its events (docs/output.md, "Traces"); exported by
telemetry.py.

    orkeon run ─ step STEP ─ batch B ─ role R ─ model turn
                                             ├─ tool TOOL ─ hook EVENT
                                             └─ hook EVENT        (settings-shape hooks
                           └─ audit B                              outside a call)

Times come from the events (an event's `ts`, less its `seconds` where the event comes at
the end of the work), so the spans are what the run did, not when they were heard of.
Roles of dev-spec, dev-plan and tasks-repair sit directly under the step. A pipeline's
steps (`step.start` … `step.end`) are spans `step NAME` under its own step span, and
their batches and roles under them. A call's hooks
are placed by their order and durations: pre-tool hooks from the call's start, post-tool
hooks back from its end (settings-shape hooks of one event side by side: they run in
parallel). Attributes are `orkeon.*`, and the GenAI conventions' `gen_ai.*` for tokens
and tool names.
"""

from __future__ import annotations

from typing import Any

from ..calls import result_text
from ..vocabulary import error_kind, error_message
from .progress.text import clean

_PRE = ("pre-tool", "PreToolUse", "Notification")


def _ns(ts: float) -> int:
    return int(ts * 1e9)


def _attrs(**fields: Any) -> dict[str, Any]:
    """Span attributes: `orkeon.NAME`, or the GenAI conventions' `gen_ai.…` (a `__` in a
    keyword is a dot); None left out."""
    out = {}
    for key, value in fields.items():
        if value is None:
            continue
        name = key.replace("__", ".")
        out[name if name.startswith("gen_ai.") else f"orkeon.{name}"] = value
    return out


class SpanTree:
    """Spans for one run's events, through an OpenTelemetry `tracer` (`trace` is the
    opentelemetry.trace module, passed in so that nothing here imports it). `handle` takes
    each event in order; `end_all` ends whatever is still open."""

    def __init__(self, tracer: Any, trace: Any) -> None:
        self.tracer = tracer
        self._trace = trace
        self._run: Any = None
        self._step: Any = None
        self._pipeline: Any = None  # a pipeline's own step span, while one of its steps runs
        self._batches: dict[str, Any] = {}
        self._roles: dict[str, Any] = {}
        self._calls: dict[tuple[str, int], float] = {}  # (role, seq) -> tool.start ts
        self._role_ends: dict[str | None, float] = {}  # batch -> its last role's end

    def handle(self, event: dict[str, Any]) -> None:
        handler = _HANDLERS.get(event["type"])
        if handler is not None:
            handler(self, event)

    def _span(self, name: str, parent: Any, start: float, kind: Any = None, **attrs: Any) -> Any:
        trace = self._trace
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(
            name,
            context=context,
            kind=kind if kind is not None else trace.SpanKind.INTERNAL,
            attributes=_attrs(**attrs),
            start_time=_ns(start),
        )

    def _fail(self, span: Any, description: str | None) -> None:
        trace = self._trace
        span.set_status(trace.Status(trace.StatusCode.ERROR, description))

    def _parent(self, batch: str | None) -> Any:
        return self._batches.get(batch or "") or self._step

    def end_all(self, ts: float) -> None:
        for span in [*self._roles.values(), *self._batches.values()]:
            span.end(end_time=_ns(ts))
        self._roles.clear()
        self._batches.clear()
        for span in (self._step, self._pipeline, self._run):
            if span is not None:
                span.end(end_time=_ns(ts))
        self._step = self._pipeline = self._run = None

    def step_start(self, e: dict[str, Any]) -> None:
        """A pipeline's step begins: its span under the pipeline's, the parent of what
        follows until its `step.end`."""
        if self._pipeline is None:
            self._pipeline = self._step
        self._step = self._span(f"step {e['name']}", self._pipeline, e["ts"], step=e.get("step"),
                                step_name=e["name"], resume=e.get("resume"))  # fmt: skip

    def step_end(self, e: dict[str, Any]) -> None:
        if self._pipeline is None or self._step is None:
            return  # no step.start before it
        span = self._step
        self._step, self._pipeline = self._pipeline, None
        why = error_message(e.get("error"))
        span.set_attributes(_attrs(status=e.get("status"), exit_code=e.get("exit_code"),
                                   error=why, error_kind=error_kind(e.get("error"))))  # fmt: skip
        if e.get("status") != "succeeded":
            self._fail(span, _value(why or e.get("status")))
        span.end(end_time=_ns(e["ts"]))

    def run_start(self, e: dict[str, Any]) -> None:
        budget = {f"budget__{k}": v for k, v in (e.get("budget") or {}).items()}
        self._run = self._span("orkeon run", None, e["ts"], run_id=e.get("run_id"),
                               run_dir=e.get("run_dir"), resume=e.get("resume"), **budget)  # fmt: skip
        self._step = self._span(f"step {e['step']}", self._run, e["ts"], step=e["step"],
                                workspace=e.get("workspace"))  # fmt: skip

    def batch_start(self, e: dict[str, Any]) -> None:
        self._batches[e["batch"]] = self._span(
            f"batch {e['batch']}", self._step, e["ts"], batch=e["batch"], roles=e.get("roles")
        )

    def batch_end(self, e: dict[str, Any]) -> None:
        span = self._batches.pop(e["batch"], None)
        if span is not None:
            span.set_attribute("orkeon.passed", bool(e.get("passed")))
            if not e.get("passed"):
                self._fail(span, f"batch {e['batch']} failed")
            span.end(end_time=_ns(e["ts"]))

    def role_start(self, e: dict[str, Any]) -> None:
        self._roles[e["role"]] = self._span(
            f"role {e['role']}", self._parent(e.get("batch")), e["ts"],
            role=e["role"], batch=e.get("batch"), step=e.get("step"),
        )  # fmt: skip

    def role_end(self, e: dict[str, Any]) -> None:
        self._role_ends[e.get("batch")] = e["ts"]
        span = self._roles.pop(e["role"], None)
        if span is None:
            return
        span.set_attributes(_attrs(status=e["status"], error=e.get("error"), turns=e["turns"],
                                   calls=e["calls"], refused=e["refused"]))  # fmt: skip
        if e["status"] != "succeeded":
            self._fail(span, e.get("error") or e["status"])
        span.end(end_time=_ns(e["ts"]))

    def model_turn(self, e: dict[str, Any]) -> None:
        span = self._span(
            "model turn", self._roles.get(e["role"]) or self._step, e["ts"] - e["seconds"],
            self._trace.SpanKind.CLIENT, gen_ai__operation__name="chat",
            gen_ai__usage__input_tokens=e["tokens_in"], gen_ai__usage__output_tokens=e["tokens_out"],
            role=e["role"], turn=e["turn"], tool_calls=e["tool_calls"], usd=e.get("usd"),
        )  # fmt: skip
        span.end(end_time=_ns(e["ts"]))

    def tool_start(self, e: dict[str, Any]) -> None:
        self._calls[(e["role"], e["seq"])] = e["ts"]

    def tool_call(self, e: dict[str, Any]) -> None:
        took = e["tool_seconds"] + e["hook_seconds"]
        start = self._calls.pop((e["role"], e["seq"]), e["ts"] - took)
        result = e.get("result")
        code = result.get("exit_code") if isinstance(result, dict) else None
        span = self._span(
            f"tool {e['tool']}", self._roles.get(e["role"]) or self._step, start,
            gen_ai__operation__name="execute_tool", gen_ai__tool__name=e["tool"],
            role=e["role"], seq=e["seq"], tool=e["tool"], outcome=e["outcome"],
            refused_by=e.get("refused_by"), exit_code=code if isinstance(code, int) else None,
            tool_seconds=e["tool_seconds"], hook_seconds=e["hook_seconds"],
        )  # fmt: skip
        if e["outcome"] == "refused":
            span.set_attribute("orkeon.refusal", clean(_text(result), 500))
        self._hooks(span, e.get("hooks") or [], start, e["ts"])
        span.end(end_time=_ns(e["ts"]))

    def _hooks(self, parent: Any, hooks: list[dict[str, Any]], start: float, end: float) -> None:
        pre = [h for h in hooks if h["event"] in _PRE]
        post = [h for h in hooks if h["event"] not in _PRE]
        at = start
        for group in _groups(pre):
            for h in group:
                self._hook(parent, h, at)
            at += max(h["seconds"] for h in group)
        at = end
        for group in reversed(_groups(post)):
            longest = max(h["seconds"] for h in group)
            for h in group:
                self._hook(parent, h, at - longest)
            at -= longest

    def _hook(self, parent: Any, h: dict[str, Any], start: float) -> None:
        span = self._span(
            f"hook {h['event']}", parent, start, hook__event=h["event"], hook__n=h.get("n"),
            hook__command=h["command"], hook__exit_code=h.get("exit_code"),
            hook__timed_out=h.get("timed_out"), hook__first_line=h.get("first_line") or None,
        )  # fmt: skip
        if h.get("timed_out") or h.get("exit_code") is None:
            self._fail(span, h.get("first_line") or "the hook did not finish")
        span.end(end_time=_ns(start + h["seconds"]))

    def hook_run(self, e: dict[str, Any]) -> None:
        self._hook(self._roles.get(e["role"]) or self._step, e, e["ts"] - e["seconds"])

    def audit(self, e: dict[str, Any]) -> None:
        batch = e.get("batch")
        parent = self._parent(batch)
        start = self._role_ends.get(batch, e["ts"])
        span = self._span(
            f"audit {batch}", parent, min(start, e["ts"]), batch=batch, passed=e.get("passed"),
            changed=e.get("changed"), outside_roots=list(e.get("outside_roots") or []) or None,
            failed_command=" ".join(e.get("failed_command") or []) or None,
        )  # fmt: skip
        if not e.get("passed"):
            self._fail(span, clean(e.get("output_tail") or "the audit failed", 300))
        span.end(end_time=_ns(e["ts"]))

    def note(self, e: dict[str, Any]) -> None:
        """compact, plan.invalid, batch.skipped, repair.start: events on their span."""
        span = self._roles.get(e.get("role") or "") or self._step
        if span is None:
            return
        fields = {k: v for k, v in e.items() if k not in ("type", "ts") and v is not None}
        values = {k: _value(v) for k, v in fields.items()}
        span.add_event(e["type"], attributes=_attrs(**values), timestamp=_ns(e["ts"]))

    def result(self, e: dict[str, Any]) -> None:
        b = e.get("budget") or {}
        for span in (self._run, self._step):
            if span is None:
                continue
            why = error_message(e.get("error"))
            span.set_attributes(_attrs(status=e["status"], exit_code=e["exit_code"],
                                       error=why, error_kind=error_kind(e.get("error")),
                                       usd=b.get("usd"), turns=b.get("turns"),
                                       tokens_in=b.get("tokens_in"), tokens_out=b.get("tokens_out"),
                                       used_seconds=b.get("used_seconds")))  # fmt: skip
            if e["status"] != "succeeded":
                self._fail(span, why or e["status"])
        self.end_all(e["ts"])


def _groups(hooks: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Hooks in the order they ran: each native hook alone, settings-shape hooks of one
    event together (they run side by side)."""
    out: list[list[dict[str, Any]]] = []
    for h in hooks:
        last = out[-1][0] if out else {"n": 0}
        if h.get("n") is None and last.get("n") is None and last["event"] == h["event"]:
            out[-1].append(h)
        else:
            out.append([h])
    return out


def _value(v: Any) -> Any:
    """An event's field as an attribute value: scalars and lists of text as they are."""
    if isinstance(v, str | bool | int | float):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return [clean(x, 500) for x in v]
    return clean(v, 500)


def _text(result: Any) -> str:
    return result_text(result)


_HANDLERS = {
    "run.start": SpanTree.run_start,
    "batch.start": SpanTree.batch_start,
    "batch.end": SpanTree.batch_end,
    "role.start": SpanTree.role_start,
    "role.end": SpanTree.role_end,
    "model.turn": SpanTree.model_turn,
    "tool.start": SpanTree.tool_start,
    "tool.call": SpanTree.tool_call,
    "hook.run": SpanTree.hook_run,
    "audit": SpanTree.audit,
    "compact": SpanTree.note,
    "plan.invalid": SpanTree.note,
    "batch.skipped": SpanTree.note,
    "repair.start": SpanTree.note,
    "result": SpanTree.result,
    "step.start": SpanTree.step_start,
    "step.end": SpanTree.step_end,
}
