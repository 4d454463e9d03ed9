"""`orkeon run task` through the command line: one role on the request, its answer checked
against `output_schema` (docs/inputs.md, "task" and "output_schema"; docs/output.md,
"output" and the error kind `output`), with the scripted model and the providers' fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit.cli import clean_environment, orkeon, run_dir, run_json
from kit.fakes import anthropic_api, openai_api
from kit.fakes.anthropic_api import AnthropicFake
from kit.fakes.openai_api import OpenAIFake
from kit.report import read_outputs
from kit.steps import events, make_workspace, user_messages

SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"enum": ["bug", "feature", "question"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 3},
    },
    "required": ["label", "priority"],
    "additionalProperties": False,
}
VALID = {"label": "bug", "priority": 2}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clean_environment(tmp_path, monkeypatch)
    return make_workspace(tmp_path, {"README.md": "# demo\n"})


def task_doc(answers: list[Any], **more: Any) -> dict[str, Any]:
    entries = [{"text": a if isinstance(a, str) else json.dumps(a)} for a in answers]
    return {
        "request": "Triage issue 7: the app crashes on start.",
        "output_schema": SCHEMA,
        "model": {"provider": "scripted", "script": {"agent": entries}},
        **more,
    }


def test_an_invalid_answer_goes_back_with_the_validators_message(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/inputs.md, "output_schema": "an answer that does not validate is sent back to
    the role with the validator's message"; the valid one is the result's `output`."""
    code, result, _ = run_json(capsys, "task", ws, doc=task_doc([{"label": "crash"}, VALID]))
    assert code == 0, result["error"]
    assert result["status"] == "succeeded" and result["output"] == VALID
    rd = run_dir(ws, result)
    first, retry = user_messages(rd, "agent")
    assert json.dumps(SCHEMA, indent=2) in first  # the role is told the schema
    assert "'crash' is not one of" in retry and "'priority' is a required property" in retry
    (invalid,) = events(rd, "output.invalid")
    assert invalid["attempt"] == 1 and any("crash" in p for p in invalid["problems"])


def test_a_code_fence_around_the_json_is_read(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "output_schema": the answer is the JSON value (a code fence allowed)."""
    fenced = "```json\n" + json.dumps(VALID) + "\n```"
    code, result, _ = run_json(capsys, "task", ws, doc=task_doc([fenced]))
    assert code == 0 and result["output"] == VALID


def test_no_valid_answer_is_exit_1_kind_output(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/output.md: "`output`: the role ended without an answer valid against
    `output_schema`" (exit 1), never exit 0 with an empty answer; `output_retries` bounds
    the answers sent back."""
    doc = task_doc(["not json", {"label": "bug"}, {"label": "x", "priority": 9}, VALID])
    doc["output_retries"] = 1
    code, result, _ = run_json(capsys, "task", ws, doc=doc)
    assert code == 1
    assert result["status"] == "failed" and result["output"] is None
    assert result["error"]["kind"] == "output"
    assert result["error"]["message"].startswith("no valid answer after 2 answers")
    assert "'priority' is a required property" in result["error"]["message"]
    assert len(user_messages(run_dir(ws, result), "agent")) == 2  # one sent back, no more


def test_an_empty_answer_without_a_schema_is_no_answer(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/inputs.md, "task": without a schema the answer is the final text; an empty
    one fails with kind `output`."""
    doc = task_doc([""])
    del doc["output_schema"]
    code, result, _ = run_json(capsys, "task", ws, doc=doc)
    assert code == 1 and result["error"]["kind"] == "output" and result["output"] is None
    doc = task_doc(["It is a bug in main()."])
    del doc["output_schema"]
    code, result, _ = run_json(capsys, "task", ws, doc=doc)
    assert code == 0 and result["output"] == "It is a bug in main()."


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "objekt"}, "output_schema: not a JSON Schema (draft 2020-12) at type"),
        ({"required": "label"}, "output_schema: not a JSON Schema (draft 2020-12) at required"),
        ("label", "output_schema: a JSON Schema (an object) or @PATH"),
        (3, "output_schema: a JSON Schema is an object"),
        ("@missing.json", "output_schema"),
    ],
)
def test_a_schema_that_does_not_compile_is_exit_2(
    ws: Path, capsys: pytest.CaptureFixture[str], schema: Any, said: str
) -> None:
    """docs/inputs.md, "Bad input": an `output_schema` that is not a schema: exit 2 naming
    the field, nothing run."""
    doc = task_doc([VALID], output_schema=schema)
    code, out, err = orkeon(capsys, "run", "task", "--workspace", str(ws), "--inputs",
                            json.dumps(doc), "--output", "json")  # fmt: skip
    assert code == 2 and out == ""
    assert said in err and "Traceback" not in err
    assert not (ws / ".orkeon" / "runs").exists()


def test_a_schema_file_in_the_workspace(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "output_schema": `@PATH`, relative to the workspace."""
    (ws / "triage.schema.json").write_text(json.dumps(SCHEMA))
    doc = task_doc([VALID], output_schema="@triage.schema.json")
    code, result, _ = run_json(capsys, "task", ws, doc=doc)
    assert code == 0 and result["output"] == VALID


def test_text_output_prints_the_answer(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/output.md, "output": `--output text` prints the answer."""
    code, out, _ = orkeon(capsys, "run", "task", "--workspace", str(ws), "--inputs",
                          json.dumps(task_doc([VALID])), "--output", "text",
                          "--progress", "none")  # fmt: skip
    assert code == 0
    assert out.split("output:\n", 1)[1] == json.dumps(VALID, indent=2) + "\n"


def test_github_output_is_json_for_fromjson(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/ci.md, "A triage job": the step's output `output` is the answer as JSON."""
    outputs = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    code, _, _ = run_json(capsys, "task", ws, doc=task_doc([VALID]))
    assert code == 0
    assert json.loads(read_outputs(outputs.read_text())["output"]) == VALID
    outputs.write_text("")
    code, _, _ = run_json(capsys, "task", ws, doc=task_doc(["no"], output_retries=0))
    assert code == 1 and read_outputs(outputs.read_text())["output"] == "null"


def test_anthropic_gets_a_forced_answer_tool(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/inputs.md, "output_schema": Anthropic's structured mode is a forced tool
    answer whose input schema is the schema; the tool's input is the answer."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with AnthropicFake() as server:
        server.push(
            anthropic_api.message(calls=[("c1", "final_answer", {"label": "feature"})]),
            anthropic_api.message(calls=[("c2", "final_answer", VALID)]),
        )
        model = {"provider": "anthropic", "model": "claude-sonnet-4-6",
                 "base_url": server.base_url, "max_retries": 0}  # fmt: skip
        code, result, _ = run_json(capsys, "task", ws, doc={**task_doc([]), "model": model})
        bodies = [r.body for r in server.requests]
    assert code == 0, result["error"] and result["output"] == VALID
    assert result["output"] == VALID
    first = bodies[0]
    assert first["tool_choice"] == {"type": "any"}
    (answer,) = [t for t in first["tools"] if t["name"] == "final_answer"]
    assert answer["input_schema"]["properties"] == SCHEMA["properties"]
    # The invalid first answer went back as the user's message, after the tool's result.
    blocks = bodies[1]["messages"][-1]["content"]
    assert any("'priority' is a required property" in b.get("text", "") for b in blocks)


def test_openai_gets_response_format_json_schema(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/inputs.md, "output_schema": OpenAI's `response_format: json_schema`; a schema
    for a value that is not an object goes wrapped, and the answer comes back unwrapped."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    schema = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    with OpenAIFake() as server:
        server.push(openai_api.completion(json.dumps({"value": ["crash", "start"]})))
        model = {"provider": "openai", "model": "gpt-4o-mini",
                 "base_url": server.base_url, "max_retries": 0}  # fmt: skip
        doc = {**task_doc([]), "model": model, "output_schema": schema}
        code, result, _ = run_json(capsys, "task", ws, doc=doc)
        body = server.requests[0].body
    assert code == 0, result["error"]
    assert result["output"] == ["crash", "start"]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == {
        "type": "object", "properties": {"value": schema}, "required": ["value"]
    }  # fmt: skip


def test_task_needs_a_request(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "task": a request is required (exit 2 naming it)."""
    doc = task_doc([VALID])
    del doc["request"]
    code, _, err = orkeon(capsys, "run", "task", "--workspace", str(ws), "--inputs",
                          json.dumps(doc))  # fmt: skip
    assert code == 2 and "request:" in err
