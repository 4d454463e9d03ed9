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
from .progress.text import clean
from .spans import SpanTree

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_TIMEOUT = 10.0


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
        self.tree = SpanTree(self.tracer, trace)
        self._quiet = False

    # --- the listener ------------------------------------------------------------------

    def __call__(self, event: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            with self._lock:
                self.tree.handle(event)
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
