"""OpenTelemetry traces of a run (docs/output.md, "Traces"), exported over OTLP/HTTP
(protobuf), configured by the standard `OTEL_*` variables.

On only when asked: `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
is set, or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_TRACES_EXPORTER=none` or
`OTEL_SDK_DISABLED=true` keep it off. Off, nothing from opentelemetry is imported. On
without the `otel` extra installed, one warning and the run goes on.

`Traces` is an `EventLog` listener: spans.py builds the span tree (run, step, batch,
role, model turn, tool call, hook, audit) from the events, with the times they give.
Spans leave in batches from the SDK's processor thread; at the end of the run
the rest is flushed, bounded by the exporter's time-out (`OTEL_EXPORTER_OTLP_TIMEOUT`,
default 10 s): a collector that is down or silent costs at most that, and one warning.

The CI's trace goes on: a `TRACEPARENT` in orkeon's environment (W3C trace context, with
`TRACESTATE` when there is one) makes the run's span its child; a malformed one is one
warning and a new trace. While the run goes, each task's programs get the trace context
of the span they run under (`environ.set_trace`, read by `environ.traced`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__, environ, logs
from .progress.text import clean

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT = 10.0
# W3C trace context, version 00 (a later version's first four fields read the same).
TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


def parent_ids(environ: Mapping[str, str]) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of the environment's TRACEPARENT; None when there is none.
    A malformed one is one warning, and the run starts a new trace."""
    raw = environ.get("TRACEPARENT")
    if raw is None:
        return None
    m = TRACEPARENT.fullmatch(raw.strip())
    ok = m is not None and m.group(1) != "ff" and (m.group(1) != "00" or not m.group(5))
    if m is None or not ok or not int(m.group(2), 16) or not int(m.group(3), 16):
        logs.warn(f"traces: TRACEPARENT is malformed ({clean(raw, 80)!r}): a new trace")
        return None
    return int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)


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
    except Exception as exc:  # a setting the SDK cannot use: the run goes on without traces
        logs.warn(f"traces: cannot start: {type(exc).__name__}: {exc}")
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


def _tracestate(raw: str) -> str:
    """The CI's TRACESTATE, passed on as it is when it is one printable line (W3C's limit,
    512 characters); otherwise none."""
    raw = raw.strip()
    ok = raw and len(raw) <= 512 and raw.isprintable()
    return raw if ok else ""


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
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

        from . import spans  # as OpenTelemetry: only for a run that exports traces

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

        class Reserving(RandomIdGenerator):
            """Random ids, but the next span takes `next` when set: a tool call's span,
            made at its end, gets the id its programs were given at its start."""

            next: int | None = None

            def generate_span_id(self) -> int:
                found, self.next = self.next, None
                return found if found is not None else super().generate_span_id()

        self.exporter = Counting(OTLPSpanExporter(endpoint=self.endpoint, timeout=self.timeout))
        ids = Reserving()
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False, id_generator=ids)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("orkeon", __version__)
        self._lock = threading.Lock()
        root, state = None, ""
        found = parent_ids(environ)
        if found is not None:
            trace_id, span_id, flags = found
            state = _tracestate(environ.get("TRACESTATE", ""))
            remote = trace.SpanContext(
                trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(flags & 1),
                trace_state=trace.TraceState.from_header([state]) if state else None,
            )  # fmt: skip
            root = trace.set_span_in_context(trace.NonRecordingSpan(remote))
        self.tree = spans.SpanTree(self.tracer, trace, root=root, ids=ids, tracestate=state)
        self._unchanged = spans.UNCHANGED
        self._quiet = False

    # --- the listener ------------------------------------------------------------------

    def __call__(self, event: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            with self._lock:
                self.tree.handle(event)
                headers = self.tree.headers(event)
            if headers is not self._unchanged:
                # In the emitting task: its programs from now on run under that span.
                environ.set_trace(headers)
        except Exception as exc:  # a bug here must not end the run: no more spans
            self._quiet = True
            logs.warn(f"traces: stopped recording: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """End what is still open, flush, and warn once if spans could not be sent."""
        with self._lock:
            self.tree.end_all(time.time())
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
