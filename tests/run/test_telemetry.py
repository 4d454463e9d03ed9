"""OpenTelemetry traces (docs/output.md, "Traces"): `orkeon run` exports its spans over
OTLP/HTTP to a receiver on 127.0.0.1 written here, which decodes each
ExportTraceServiceRequest with the opentelemetry-proto classes; the span tree, the
attributes and the times are checked against the run's own events. Off, nothing from
opentelemetry is imported; a collector that is down or silent costs a bounded wait and a
warning, never the run."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kit.process import orkeon
from kit.steps import environ, make_workspace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

READ = {"tool": "file_read", "input": {"file_path": "src/a.py"}}
WRITE_DOCS = {"tool": "file_write", "input": {"file_path": "docs/x.md", "content": "x"}}
PLAN = {"batches": [
    {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]},
    {"name": "b2", "roles": [{"name": "docs", "roots": ["docs/"], "task": "t"}]},
]}  # fmt: skip
INPUTS = {
    "model": {
        "provider": "scripted",
        "price": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
        "script": {
            "b1/api": [
                {
                    "text": "Reading.",
                    "usage": {"input_tokens": 1000, "output_tokens": 50},
                    "tool_calls": [READ, WRITE_DOCS],
                },
                {"text": "done", "usage": {"input_tokens": 1200, "output_tokens": 10}},
            ],
            "b2/docs": [
                {
                    "tool_calls": [
                        {"tool": "file_write", "input": {"file_path": "docs/y.md", "content": "y"}}
                    ]
                }
            ],
        },
    },
    "plan": PLAN,
    "hooks": [{"event": "pre-tool", "command": "true"}, {"event": "post-tool", "command": "false"}],
    "audit": {"test": ["test", "!", "-e", "docs/y.md"]},  # b1 passes, b2 fails
}


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


class Receiver:
    """An OTLP/HTTP traces receiver on 127.0.0.1: decodes every request it gets."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                received.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "request": request})  # fmt: skip
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[dict[str, Any]]:
        out = []
        for r in self.requests:
            for rs in r["request"].resource_spans:
                resource = {a.key: value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append({
                            "name": s.name, "id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex() or None,
                            "trace": s.trace_id.hex(), "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano, "status": s.status.code,
                            "attrs": {a.key: value(a.value) for a in s.attributes},
                            "events": [e.name for e in s.events], "resource": resource,
                        })  # fmt: skip
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def no_otel(tmp: Path) -> dict[str, str]:
    """orkeon's environment with no OTEL_* variable of this process's."""
    return {k: v for k, v in environ(tmp).items() if not k.startswith("OTEL_")}


def run(tmp: Path, doc: dict[str, Any], timeout: float = 120, **env: str) -> Any:
    root = tmp / f"run{len(list(tmp.glob('run*')))}"
    root.mkdir()
    ws = make_workspace(root, {"src/a.py": "a = 1\n", "docs/README.md": "# d\n"})
    (root / "inputs.json").write_text(json.dumps(doc))
    proc = orkeon("run", "dev-batches", "--inputs", f"@{root / 'inputs.json'}",
                  "--workspace", str(ws), "--progress", "none", cwd=root, timeout=timeout,
                  env={**no_otel(tmp), "ORKEON_LOG_LEVEL": "warning", **env})  # fmt: skip
    result = json.loads(proc.stdout)
    run_dir = ws / ".orkeon" / "runs" / result["run_id"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").open()]
    return proc, result, events


def test_the_span_tree_its_attributes_and_times(tmp_path: Path, receiver: Receiver) -> None:
    proc, result, events = run(tmp_path, INPUTS, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    assert proc.returncode == 1 and proc.stderr == ""  # b2's audit failed; no warning
    assert {r["path"] for r in receiver.requests} == {"/v1/traces"}
    assert {r["headers"]["content-type"] for r in receiver.requests} == {"application/x-protobuf"}
    spans = receiver.spans()
    by_id = {s["id"]: s for s in spans}
    assert len(by_id) == len(spans)
    (root,) = [s for s in spans if s["parent"] is None]
    assert root["name"] == "orkeon run" and {s["trace"] for s in spans} == {root["trace"]}
    assert root["resource"]["service.name"] == "orkeon"
    assert root["attrs"]["orkeon.run_id"] == result["run_id"]
    assert root["attrs"]["orkeon.status"] == "failed" and root["attrs"]["orkeon.exit_code"] == 1
    assert root["attrs"]["orkeon.budget.seconds"] == 1800.0
    assert root["status"] == 2  # ERROR

    def children(span: dict[str, Any], name: str | None = None) -> list[dict[str, Any]]:
        kids = [s for s in spans if s["parent"] == span["id"]]
        return [s for s in kids if name is None or s["name"].startswith(name)]

    (step,) = children(root)
    assert step["name"] == "step dev-batches"
    batches = children(step, "batch ")
    assert [b["name"] for b in batches] == ["batch b1", "batch b2"]
    assert [b["attrs"]["orkeon.passed"] for b in batches] == [True, False]
    (api,) = children(batches[0], "role ")
    assert api["name"] == "role b1/api" and api["attrs"]["orkeon.status"] == "succeeded"
    assert (api["attrs"]["orkeon.calls"], api["attrs"]["orkeon.refused"]) == (2, 1)
    (audit_b1,) = children(batches[0], "audit ")
    (audit_b2,) = children(batches[1], "audit ")
    assert audit_b1["attrs"]["orkeon.passed"] is True and audit_b1["status"] != 2
    assert audit_b2["attrs"]["orkeon.passed"] is False and audit_b2["status"] == 2
    assert audit_b2["attrs"]["orkeon.failed_command"] == "test ! -e docs/y.md"

    turns = children(api, "model turn")
    assert [t["attrs"]["gen_ai.usage.input_tokens"] for t in turns] == [1000, 1200]
    assert [t["attrs"]["gen_ai.usage.output_tokens"] for t in turns] == [50, 10]
    assert turns[0]["attrs"]["orkeon.usd"] == pytest.approx((1000 * 3 + 50 * 15) / 1e6)
    tools = children(api, "tool ")
    assert [(t["name"], t["attrs"]["orkeon.outcome"]) for t in tools] == [
        ("tool file_read", "ran"), ("tool file_write", "refused")]  # fmt: skip
    assert tools[1]["attrs"]["orkeon.refused_by"] == "roots"
    assert "orkeon.refused_by" not in tools[0]["attrs"]
    assert tools[1]["attrs"]["orkeon.refusal"].startswith("[refused: docs/x.md is outside")
    hooks = children(tools[0])
    assert [(h["name"], h["attrs"]["orkeon.hook.command"], h["attrs"]["orkeon.hook.exit_code"])
            for h in hooks] == [("hook pre-tool", "true", 0), ("hook post-tool", "false", 1)]  # fmt: skip
    assert children(tools[1]) == []  # refused by the roots, before any hook ran

    # One span per call and per turn, at the times the events give.
    calls = [e for e in events if e["type"] == "tool.call"]
    assert len([s for s in spans if s["name"].startswith("tool ")]) == len(calls)
    assert len([s for s in spans if s["name"] == "model turn"]) == len(
        [e for e in events if e["type"] == "model.turn"]
    )
    starts = {(e["role"], e["seq"]): e["ts"] for e in events if e["type"] == "tool.start"}
    first = next(e for e in calls if e["role"] == "b1/api")
    assert tools[0]["start"] == pytest.approx(starts[("b1/api", 1)] * 1e9, abs=1e3)
    assert tools[0]["end"] == pytest.approx(first["ts"] * 1e9, abs=1e3)
    # Every span lies within its parent (1 ms for the two clocks the times come from).
    for s in spans:
        if s["parent"] is not None:
            p = by_id[s["parent"]]
            assert p["start"] - 1e6 <= s["start"] <= s["end"] <= p["end"] + 1e6, (s, p)


def test_the_standard_variables_name_the_service_the_url_and_headers(
    tmp_path: Path, receiver: Receiver
) -> None:
    proc, _, _ = run(
        tmp_path, INPUTS,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.url}/custom/traces",
        OTEL_SERVICE_NAME="ci-agents", OTEL_EXPORTER_OTLP_HEADERS="x-team=platform",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci",
    )  # fmt: skip
    assert proc.stderr == ""
    assert {r["path"] for r in receiver.requests} == {"/custom/traces"}
    assert {r["headers"]["x-team"] for r in receiver.requests} == {"platform"}
    resource = receiver.spans()[0]["resource"]
    assert resource["service.name"] == "ci-agents"
    assert resource["deployment.environment"] == "ci"


IMPORTED = (
    "import sys, json; from orkeon_run.__main__ import main; rc = main(sys.argv[1:]); "
    "sys.stderr.write(json.dumps({'rc': rc, 'modules': sorted(m for m in sys.modules "
    "if m.split('.')[0] in ('opentelemetry', 'rich', 'google'))}))"
)


@pytest.mark.parametrize(
    ("env", "progress"),
    [({}, "plain"), ({}, "none"),
     ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_TRACES_EXPORTER": "none"}, "plain"),
     ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}, "none")],
)  # fmt: skip
def test_off_nothing_of_opentelemetry_or_rich_is_imported(
    tmp_path: Path, env: dict[str, str], progress: str
) -> None:
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    doc = {**INPUTS, "plan": {"batches": PLAN["batches"][:1]}, "audit": {}}
    argv = [sys.executable, "-c", IMPORTED, "run", "dev-batches", "--inputs", json.dumps(doc),
            "--workspace", str(ws), "--progress", progress]  # fmt: skip
    base = {k: v for k, v in environ(tmp_path).items() if not k.startswith("OTEL_")}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**base, "ORKEON_LOG_LEVEL": "warning", **env})  # fmt: skip
    state = json.loads(proc.stderr.splitlines()[-1])
    assert state == {"rc": 0, "modules": []}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("collector", ["refuses", "never answers"])
def test_a_dead_collector_costs_a_bounded_wait_and_one_warning(
    tmp_path: Path, collector: str
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections wait in the backlog; nothing ever reads them
    port = closed_port() if collector == "refuses" else silent.getsockname()[1]
    try:
        # The pytest time-out (120 s) is far above the bound: a hang fails the test.
        proc, result, _ = run(tmp_path, INPUTS, timeout=90,
                              OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
                              OTEL_EXPORTER_OTLP_TIMEOUT="1")  # fmt: skip
    finally:
        silent.close()
    assert proc.returncode == 1 and result["exit_code"] == 1  # the run's own outcome
    (line,) = proc.stderr.splitlines()
    warning = json.loads(line)
    assert warning["level"] == "warning"
    assert warning["event"].startswith("traces: ")
    assert f"http://127.0.0.1:{port}/v1/traces" in warning["event"]


BLOCK_OTEL = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'opentelemetry':\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "from orkeon_run.__main__ import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_without_the_extra_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    """An import hook makes opentelemetry missing, as in an install without `[otel]`."""
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    doc = {**INPUTS, "plan": {"batches": PLAN["batches"][:1]}, "audit": {}}
    argv = [sys.executable, "-c", BLOCK_OTEL, "run", "dev-batches", "--inputs", json.dumps(doc),
            "--workspace", str(ws), "--progress", "none"]  # fmt: skip
    base = {k: v for k, v in environ(tmp_path).items() if not k.startswith("OTEL_")}
    env = {**base, "ORKEON_LOG_LEVEL": "warning", "OTEL_TRACES_EXPORTER": "otlp"}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=env)  # fmt: skip
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "succeeded"
    (line,) = proc.stderr.splitlines()
    assert "pip install 'orkeon[otel]'" in json.loads(line)["event"]


def test_a_pipelines_steps_are_spans_under_it(tmp_path: Path, receiver: Receiver) -> None:
    """`orkeon run pipeline`: one trace; each step a span `step NAME` under the pipeline's
    step span, its roles and batches under it."""
    write = {"tool": "file_write", "input": {"file_path": ".orkeon/spec.md", "content": "# S\n"}}
    plan = {"tool": "file_write", "input": {"file_path": ".orkeon/plan.json",
                                            "content": json.dumps(PLAN)}}  # fmt: skip
    doc = {"request": "r", "model": {"provider": "scripted", "script": {
        "writer": [{"tool_calls": [write]}], "planner": [{"tool_calls": [plan]}]}}}  # fmt: skip
    ws = make_workspace(tmp_path, {"src/a.py": "a = 1\n"})
    proc = orkeon("run", "pipeline", "--inputs", json.dumps(doc), "--workspace", str(ws),
                  "--progress", "none", cwd=tmp_path,
                  env={**no_otel(tmp_path), "ORKEON_LOG_LEVEL": "warning",
                       "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    spans = receiver.spans()
    (root,) = [s for s in spans if s["parent"] is None]

    def children(span: dict[str, Any]) -> list[dict[str, Any]]:
        return sorted((s for s in spans if s["parent"] == span["id"]), key=lambda s: s["start"])

    (pipeline,) = children(root)
    assert pipeline["name"] == "step pipeline"
    steps = children(pipeline)
    assert [s["name"] for s in steps] == ["step dev-spec", "step dev-plan", "step dev-batches"]
    assert [s["attrs"]["orkeon.status"] for s in steps] == ["succeeded"] * 3
    assert [c["name"] for c in children(steps[0])] == ["role analyst", "role writer"]
    assert [c["name"] for c in children(steps[1])] == ["role planner"]
    assert [c["name"] for c in children(steps[2])] == ["batch b1", "batch b2"]
    assert [c["name"] for c in children(children(steps[2])[0])] == ["role b1/api", "audit b1"]


CI_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CI_SPAN = "00f067aa0ba902b7"


def recorder(tmp: Path) -> tuple[Path, Path]:
    """A program that appends `NAME TRACEPARENT TRACESTATE` to a log outside the workspace
    (a hook's), and that log."""
    log = tmp / "seen.log"
    script = tmp / "record.sh"
    line = '"$1 ${TRACEPARENT:-none} ${TRACESTATE:-none}"'
    script.write_text(f"#!/bin/sh\necho {line} >> {log}\n")
    script.chmod(0o755)
    return script, log


# The audit's test, sandboxed (the host's /tmp hidden): it prints what it got and fails, so
# the audit's output holds the line.
AUDIT = ["sh", "-c", 'echo "audit $TRACEPARENT ${TRACESTATE:-none}"; exit 1']


def audited(result: dict[str, Any]) -> str:
    (audit,) = result["audits"]
    return audit["output_tail"]


def test_the_cis_trace_goes_on_and_every_program_runs_under_its_span(
    tmp_path: Path, receiver: Receiver
) -> None:
    """docs/output.md, "Traces": "TRACEPARENT (and TRACESTATE) in the environment makes the
    run's trace a child of it", and "every program orkeon starts gets TRACEPARENT set to
    the span it runs under": the shell command its tool call's, a hook during a call that
    call's, the audit's build and test its batch's."""
    script, log = recorder(tmp_path)
    shell = {"tool": "shell", "input": {"command": "printenv TRACEPARENT TRACESTATE"}}
    doc = {
        "model": {"provider": "scripted", "script": {
            "b1/api": [{"tool_calls": [READ, shell]}, {"text": "done"}]}},
        "plan": {"batches": PLAN["batches"][:1]},
        "hooks": [{"event": "pre-tool", "command": f"{script} hook"}],
        "shell": {"extra_allowed_commands": [str(script), "printenv"]},
        "audit": {"test": AUDIT},
    }  # fmt: skip
    proc, result, events = run(
        tmp_path, doc, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        TRACEPARENT=f"00-{CI_TRACE}-{CI_SPAN}-01", TRACESTATE="ci=job-7,vendor=x",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # the recording audit fails
    spans = receiver.spans()
    assert {s["trace"] for s in spans} == {CI_TRACE}
    (root,) = [s for s in spans if s["name"] == "orkeon run"]
    assert root["parent"] == CI_SPAN
    tools = {s["name"]: s for s in spans if s["name"].startswith("tool ")}
    (batch,) = [s for s in spans if s["name"] == "batch b1"]

    def header(span: dict[str, Any]) -> str:
        return f"00-{CI_TRACE}-{span['id']}-01"

    (ran,) = [e for e in events if e["type"] == "tool.call" and e["tool"] == "shell"]
    assert ran["outcome"] == "ran", ran["result"]
    printed = json.dumps(ran["result"])
    assert header(tools["tool shell"]) in printed and "ci=job-7,vendor=x" in printed
    seen = log.read_text().splitlines()
    assert seen == [
        f"hook {header(tools['tool file_read'])} ci=job-7,vendor=x",
        f"hook {header(tools['tool shell'])} ci=job-7,vendor=x",
    ]
    assert f"audit {header(batch)} ci=job-7,vendor=x" in audited(result)


@pytest.mark.parametrize(
    "given", ["garbage", f"00-{'0' * 32}-{CI_SPAN}-01", f"ff-{CI_TRACE}-{CI_SPAN}-01"]
)
def test_a_malformed_traceparent_is_a_warning_and_a_new_trace(
    tmp_path: Path, receiver: Receiver, given: str
) -> None:
    """docs/output.md, "Traces": "a malformed TRACEPARENT is one warning and a new trace";
    the programs get the new trace's spans."""
    doc = {**INPUTS, "plan": {"batches": PLAN["batches"][:1]}, "hooks": [],
           "audit": {"test": AUDIT}}  # fmt: skip
    proc, result, _ = run(
        tmp_path, doc, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, TRACEPARENT=given
    )
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert "TRACEPARENT is malformed" in line and "a new trace" in line
    spans = receiver.spans()
    (root,) = [s for s in spans if s["name"] == "orkeon run"]
    assert root["parent"] is None and root["trace"] != CI_TRACE
    (batch,) = [s for s in spans if s["name"] == "batch b1"]
    # The new trace's flags are the SDK's (sampled, and W3C's "random" bit).
    assert f"audit 00-{root['trace']}-{batch['id']}-0" in audited(result)


def test_without_traces_programs_inherit_the_cis_traceparent(tmp_path: Path) -> None:
    """Traces off: orkeon adds nothing; a program sees the CI's TRACEPARENT as it was."""
    doc = {**INPUTS, "plan": {"batches": PLAN["batches"][:1]}, "hooks": [],
           "audit": {"test": AUDIT}}  # fmt: skip
    given = f"00-{CI_TRACE}-{CI_SPAN}-01"
    proc, result, _ = run(tmp_path, doc, TRACEPARENT=given)
    assert proc.returncode == 1, proc.stderr
    assert f"audit {given} none" in audited(result)


def test_what_starts_with_the_step_runs_under_the_step_span() -> None:
    """docs/output.md, "Traces": MCP servers (started once the run has begun, for the
    step's whole length) get the `step STEP` span; after the run's result, nothing is
    added. The traces' listener sets it in the task that emitted the event only."""
    import contextvars
    import time

    from orkeon_run import environ as environ_mod
    from orkeon_run.run.telemetry import Traces

    # A collector that is not there: the spans are not what this test reads (1 s bounds the
    # exporter's retries at the end).
    traces = Traces({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                     "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
                     "TRACEPARENT": f"00-{CI_TRACE}-{CI_SPAN}-01"})  # fmt: skip

    def in_the_runs_task() -> tuple[Any, Any]:
        traces({"type": "run.start", "ts": time.time(), "run_id": "r", "step": "dev-batches"})
        during = environ_mod.traced({"TRACEPARENT": "inherited"})
        step = traces.tree._step.get_span_context()
        assert during["TRACEPARENT"] == f"00-{CI_TRACE}-{step.span_id:016x}-01"
        traces({"type": "result", "ts": time.time(), "status": "succeeded", "exit_code": 0})
        return during, environ_mod.traced({"TRACEPARENT": "inherited"})

    _, after = contextvars.copy_context().run(in_the_runs_task)
    assert after == {"TRACEPARENT": "inherited"}
    assert environ_mod.traced({"TRACEPARENT": "x"}) == {"TRACEPARENT": "x"}  # another task
    traces.provider.shutdown()
