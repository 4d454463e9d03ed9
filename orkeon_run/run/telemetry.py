"""OpenTelemetry traces of a run (docs/output.md, "Traces"), exported over OTLP/HTTP
(protobuf), configured by the standard `OTEL_*` variables.

On only when asked: `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
is set, or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_TRACES_EXPORTER=none` or
`OTEL_SDK_DISABLED=true` keep it off. Off, nothing from opentelemetry is imported. On
without the `otel` extra installed, one warning and the run goes on.

`Traces` is an `EventLog` listener: it builds the span tree from the events the run
records, with times taken from them (an event's `ts`, less its `seconds` where the event
comes at the end of the work), so the spans are what the run did, not when the listener
heard of it:

    orkeon run ─ step STEP ─ batch B ─ role R ─ model turn
                                             ├─ tool TOOL ─ hook EVENT
                                             └─ hook EVENT        (settings-shape hooks
                           └─ audit B                              outside a call)

Roles of dev-spec, dev-plan and tasks-repair sit directly under the step. A call's hooks
are placed by their order and durations: pre-tool hooks from the call's start, post-tool
hooks back from its end (settings-shape hooks of one event side by side: they run in
parallel). Spans leave in batches from the SDK's processor thread; at the end of the run
the rest is flushed, bounded by the exporter's time-out (`OTEL_EXPORTER_OTLP_TIMEOUT`,
default 10 s): a collector that is down or silent costs at most that, and one warning.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__, logs
from .progress import clean

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT = 10.0
_PRE = ("pre-tool", "PreToolUse", "Notification")


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether the standard variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [x.strip() for x in environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    if "none" in exporters:
        return False
    if "otlp" in exporters:
        return True
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return any(environ.get(name, "").strip() for name in endpoints)


def from_environ(environ: Mapping[str, str] | None = None) -> Traces | None:
    """The run's trace exporter, or None when traces are off (or cannot be sent)."""
    env = os.environ if environ is None else environ
    if not wanted(env):
        return None
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", ""
    )
    if protocol and protocol != "http/protobuf":
        logs.warn(f"traces: orkeon sends OTLP over http/protobuf, not {clean(protocol, 40)}")
    try:
        return Traces(env)
    except ImportError as exc:
        logs.warn(
            "traces: OTEL_* variables ask for traces, but the OpenTelemetry extra is not "
            f"installed (pip install 'orkeon[otel]'): {exc}"
        )
        return None


def endpoint(environ: Mapping[str, str]) -> str:
    """The traces URL, as the OTLP/HTTP exporter specification derives it."""
    given = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if given:
        return given
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    return base.rstrip("/") + "/v1/traces"


def timeout(environ: Mapping[str, str]) -> float:
    """The exporter's time-out in seconds (the Python SDK reads these as seconds)."""
    raw = environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or environ.get(
        "OTEL_EXPORTER_OTLP_TIMEOUT", ""
    )
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


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


class _FirstProblem(logging.Handler):
    """Keeps the SDK's first warning (the cause of a failed export: the error it retried
    on) for orkeon's one warning line, instead of the SDK's own lines on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.message: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.message is None:
            try:
                self.message = record.getMessage()
            except Exception:
                self.message = str(record.msg)


class Traces:
    """Builds and exports the spans of one run; see the module docstring."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class Counting(SpanExporter):
            """The OTLP exporter, counting the spans it could not send."""

            def __init__(self, inner: Any) -> None:
                self.inner = inner
                self.failed = 0
                self._closed = False

            def export(self, spans: Sequence[Any]) -> Any:
                try:
                    result = self.inner.export(spans)
                except Exception:
                    result = SpanExportResult.FAILURE
                if result != SpanExportResult.SUCCESS:
                    self.failed += len(spans)
                return result

            def shutdown(self) -> None:
                if not self._closed:
                    self._closed = True
                    self.inner.shutdown()

        self._trace = trace
        self.endpoint = endpoint(environ)
        self.timeout = timeout(environ)
        self._problem = _FirstProblem()
        logging.getLogger("opentelemetry").addHandler(self._problem)
        given = environ.get("OTEL_SERVICE_NAME") or re.search(
            r"(^|,)\s*service\.name\s*=", environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        )
        resource = Resource.create(
            {"service.version": __version__, **({} if given else {"service.name": "orkeon"})}
        )
        self.exporter = Counting(OTLPSpanExporter(endpoint=self.endpoint, timeout=self.timeout))
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("orkeon", __version__)
        self._lock = threading.Lock()
        self._run: Any = None
        self._step: Any = None
        self._batches: dict[str, Any] = {}
        self._roles: dict[str, Any] = {}
        self._calls: dict[tuple[str, int], float] = {}  # (role, seq) -> tool.start ts
        self._role_ends: dict[str | None, float] = {}  # batch -> its last role's end
        self._quiet = False

    # --- the listener ------------------------------------------------------------------

    def __call__(self, event: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            with self._lock:
                handler = _HANDLERS.get(event["type"])
                if handler is not None:
                    handler(self, event)
        except Exception as exc:  # a bug here must not end the run: no more spans
            self._quiet = True
            logs.warn(f"traces: stopped recording: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """End what is still open, flush, and warn once if spans could not be sent."""
        with self._lock:
            self._end_all(time.time())
        done = threading.Event()

        def shut_down() -> None:
            try:
                self.provider.shutdown()
            finally:
                done.set()

        threading.Thread(target=shut_down, name="orkeon-traces", daemon=True).start()
        answered = done.wait(self.timeout + 1.0)
        if not answered:
            self.exporter.shutdown()  # stops the exporter's retries; the thread is left
        logging.getLogger("opentelemetry").removeHandler(self._problem)
        if not answered:
            logs.warn(
                f"traces: the collector at {self.endpoint} did not answer within "
                f"{self.timeout:g} s; spans not sent are lost"
            )
        elif self.exporter.failed:
            why = f": {clean(self._problem.message, 300)}" if self._problem.message else ""
            logs.warn(
                f"traces: {self.exporter.failed} spans could not be sent to {self.endpoint}{why}"
            )

    # --- spans -------------------------------------------------------------------------

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

    def _end_all(self, ts: float) -> None:
        for span in [*self._roles.values(), *self._batches.values()]:
            span.end(end_time=_ns(ts))
        self._roles.clear()
        self._batches.clear()
        for span in (self._step, self._run):
            if span is not None:
                span.end(end_time=_ns(ts))
        self._step = self._run = None

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
            outside_roots=list(e.get("outside_roots") or []) or None,
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
            span.set_attributes(_attrs(status=e["status"], exit_code=e["exit_code"],
                                       error=e.get("error"), usd=b.get("usd"), turns=b.get("turns"),
                                       tokens_in=b.get("tokens_in"), tokens_out=b.get("tokens_out"),
                                       used_seconds=b.get("used_seconds")))  # fmt: skip
            if e["status"] != "succeeded":
                self._fail(span, e.get("error") or e["status"])
        self._end_all(e["ts"])


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
    from ..calls import result_text

    return result_text(result)


_HANDLERS = {
    "run.start": Traces.run_start,
    "batch.start": Traces.batch_start,
    "batch.end": Traces.batch_end,
    "role.start": Traces.role_start,
    "role.end": Traces.role_end,
    "model.turn": Traces.model_turn,
    "tool.start": Traces.tool_start,
    "tool.call": Traces.tool_call,
    "hook.run": Traces.hook_run,
    "audit": Traces.audit,
    "compact": Traces.note,
    "plan.invalid": Traces.note,
    "batch.skipped": Traces.note,
    "repair.start": Traces.note,
    "result": Traces.result,
}
