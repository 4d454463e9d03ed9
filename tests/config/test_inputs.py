"""The --inputs document: every kind of bad input exits 2 with one line naming the field.

docs/output.md: "2 | usage error or invalid inputs; nothing ran; the message names
the bad field". Section 2: "Unknown keys are an error (exit 2, naming the key)."
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kit import ROOT
from pydantic import ValidationError

from orkeon_run.__main__ import main
from orkeon_run.config.inputs import Inputs, NativeHook, Plan, parse_inputs
from orkeon_run.errors import InputError

PLAN_OK = {"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "t"}]}]}

BAD_INPUTS = [
    ("not json", "{", "inputs: not JSON"),
    ("not an object", "[1, 2]", "inputs: must be a JSON object"),
    ("unknown key", '{"colour": 1}', "colour: unknown key"),
    ("unknown nested key", '{"budget": {"secs": 1}}', "budget.secs: unknown key"),
    ("wrong type", '{"budget": {"seconds": "soon"}}', "budget.seconds:"),
    ("negative concurrency", '{"concurrency": 0}', "concurrency:"),
    (
        "a zero time budget",
        '{"budget": {"seconds": 0}}',
        "budget.seconds: Input should be greater than 0",
    ),
    (
        "a zero turn budget",
        '{"budget": {"turns": 0}}',
        "budget.turns: Input should be greater than or equal to 1",
    ),
    ("plan without batches", json.dumps({"plan": {"batches": []}}), "plan.batches:"),
    (
        "role without roots",
        json.dumps(
            {
                "plan": {
                    "batches": [{"name": "b", "roles": [{"name": "r", "roots": [], "task": "t"}]}]
                }
            }
        ),
        "plan.batches[0].roles[0].roots:",
    ),
    (
        "root outside the workspace",
        json.dumps(
            {
                "plan": {
                    "batches": [
                        {"name": "b", "roles": [{"name": "r", "roots": ["../x"], "task": "t"}]}
                    ]
                }
            }
        ),
        "plan.batches[0].roles[0].roots[0]:",
    ),
    (
        "hook with a shell operator",
        '{"hooks": [{"event": "pre-tool", "command": "true"}, {"event": "pre-tool", "command": "a && b"}]}',
        "hooks[1].command: '&&' is refused",
    ),
    (
        "hook with a line break",
        '{"hooks": [{"event": "pre-tool", "command": "true\\nfalse"}]}',
        "hooks[0].command: a line break is refused",
    ),
    (
        "hook with a bad event",
        '{"hooks": [{"event": "before", "command": "true"}]}',
        "hooks[0].event:",
    ),
    ("unknown provider", '{"model": {"provider": "gpt"}}', "model:"),
    (
        "openai without a model name",
        '{"model": {"provider": "openai"}}',
        "model.model: Field required",
    ),
    (
        "settings hook without command",
        '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}',
        "hooks.PreToolUse[0].hooks[0].command: Field required",
    ),
    (
        "settings hook of another type",
        '{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}',
        "hooks.PreToolUse[0].hooks[0].type:",
    ),
    (
        "non-numeric timeout",
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "ten"}]}]}}',
        "hooks.Stop[0].hooks[0].timeout:",
    ),
    ("absolute spec path", '{"spec": "/etc/passwd"}', "spec:"),
    ("repair role without batch", '{"repair": {"run": "r", "role": "api"}}', "repair.role:"),
]


@pytest.mark.parametrize(("name", "doc", "expected"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_inputs_exit_2_naming_the_field(name, doc, expected, capsys, tmp_path):
    code = main(["validate", "--inputs", doc, "--workspace", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert expected in err, err
    assert "Traceback" not in err
    for line in err.splitlines():
        assert line.startswith("orkeon: ")


def test_every_problem_is_reported_not_just_the_first(capsys, tmp_path):
    doc = '{"colour": 1, "budget": {"seconds": "x"}, "concurrency": -1}'
    assert main(["validate", "--inputs", doc, "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3
    assert any("colour: unknown key" in line for line in err)


def test_inputs_from_file_and_stdin(tmp_path, capsys):
    f = tmp_path / "in.json"
    f.write_text('{"budget": {"seconds": 5}}')
    assert main(["validate", "--inputs", f"@{f}", "--workspace", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "inputs are valid\n"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "orkeon_run",
            "validate",
            "--inputs",
            "-",
            "--workspace",
            str(tmp_path),
        ],
        input='{"budget": {"seconds": 5}}',
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "inputs are valid\n"


def test_missing_inputs_file_names_it(tmp_path, capsys):
    assert main(["validate", "--inputs", f"@{tmp_path / 'nope.json'}"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_missing_workspace(tmp_path, capsys):
    assert main(["validate", "--inputs", "{}", "--workspace", str(tmp_path / "gone")]) == 2
    assert "--workspace: not a directory" in capsys.readouterr().err


def test_step_checks_dev_spec_needs_a_request(tmp_path, capsys):
    code = main(["validate", "--inputs", "{}", "--step", "dev-spec", "--workspace", str(tmp_path)])
    assert code == 2
    assert "request:" in capsys.readouterr().err


def test_step_checks_dev_batches_reads_the_plan_file(tmp_path, capsys):
    doc = json.dumps({"model": {"provider": "scripted"}})
    code = main(
        ["validate", "--inputs", doc, "--step", "dev-batches", "--workspace", str(tmp_path)]
    )
    assert code == 2
    assert "plan: no such file in the workspace: .orkeon/plan.json" in capsys.readouterr().err
    (tmp_path / ".orkeon").mkdir()
    (tmp_path / ".orkeon/plan.json").write_text(json.dumps({"batches": []}))
    code = main(
        ["validate", "--inputs", doc, "--step", "dev-batches", "--workspace", str(tmp_path)]
    )
    assert code == 2
    assert "plan.batches:" in capsys.readouterr().err
    (tmp_path / ".orkeon/plan.json").write_text(json.dumps(PLAN_OK))
    code = main(
        ["validate", "--inputs", doc, "--step", "dev-batches", "--workspace", str(tmp_path)]
    )
    assert code == 0


def test_defaults():
    inputs = parse_inputs({})
    assert inputs.model.provider == "scripted"
    assert inputs.budget.seconds == 1800
    assert inputs.spec == ".orkeon/spec.md"
    assert inputs.plan == ".orkeon/plan.json"
    assert inputs.concurrency == 4
    assert inputs.native_hooks == []
    assert inputs.settings_hooks == {}


def test_models_are_frozen():
    inputs = parse_inputs({"hooks": [{"event": "pre-tool", "command": "true"}]})
    with pytest.raises(ValidationError):
        inputs.concurrency = 3  # type: ignore[misc]
    assert isinstance(inputs.hooks[0], NativeHook)


def test_plan_object_and_duplicate_names():
    assert isinstance(parse_inputs({"plan": PLAN_OK}).plan, Plan)
    dup = {"batches": [PLAN_OK["batches"][0], PLAN_OK["batches"][0]]}
    with pytest.raises(InputError, match="batch names repeat: b1"):
        parse_inputs({"plan": dup})


def test_inputs_model_rejects_extra_everywhere():
    schema = Inputs.model_json_schema()
    assert schema["additionalProperties"] is False
    for name, sub in schema["$defs"].items():
        if sub.get("type") == "object" and "properties" in sub:
            assert sub.get("additionalProperties") is False, name


def test_example_inputs_validate(tmp_path, capsys):
    """Every example inputs file in the repository is valid (they are documentation)."""
    files = sorted((ROOT / "examples").rglob("inputs*.json")) + sorted(
        (ROOT / "examples").rglob("inputs/*.json")
    )
    assert files, "no example inputs found"  # the demo's inputs at least
    for f in sorted(set(files)):
        doc = json.loads(f.read_text())
        doc.pop("workspace", None)
        # The workspace they are written for (the demo's `project/`, beside `inputs/`):
        # validate looks for the hooks' scripts there.
        ws = f.parent.parent / "project" if (f.parent.parent / "project").is_dir() else f.parent
        assert main(["validate", "--inputs", json.dumps(doc), "--workspace", str(ws)]) == 0, (
            f,
            capsys.readouterr().err,
        )


def test_values_of_the_wrong_json_type_are_refused_not_coerced() -> None:
    """`orkeon schema inputs` says `concurrency` is an integer: the text "4" is not one (it
    used to pass `validate`), nor "30" a number of seconds, nor "true" a boolean."""
    base = {"model": {"provider": "scripted", "script": {}}}
    for doc, line in (
        ({**base, "concurrency": "4"}, "concurrency: Input should be a valid integer"),
        ({**base, "budget": {"seconds": "30"}}, "budget.seconds: Input should be a valid number"),
        (
            {**base, "shell": {"allow_interpreters": "true"}},
            "shell.allow_interpreters: Input should be a valid boolean",
        ),
    ):
        with pytest.raises(InputError) as err:
            parse_inputs(doc)
        assert err.value.problems == [line]
    assert parse_inputs({**base, "concurrency": 4, "budget": {"seconds": 30}}).concurrency == 4


def test_a_schema_pointer_is_allowed() -> None:
    """An editor's `$schema` (the file `orkeon schema inputs` wrote, or a URL) is not an
    unknown key; anything else unknown still is."""
    doc = {"$schema": "./inputs.schema.json", "model": {"provider": "scripted", "script": {}}}
    assert parse_inputs(doc).schema_ == "./inputs.schema.json"
    with pytest.raises(InputError) as err:
        parse_inputs({**doc, "$schemas": "x"})
    assert err.value.problems == ["$schemas: unknown key; did you mean '$schema'?"]


def test_a_misspelt_key_gets_the_nearest_allowed_one() -> None:
    """ "did you mean" for misspelt keys, at any depth, from the inputs' own schema; a key
    close to none gets no guess."""
    for doc, line in (
        ({"modl": {}}, "modl: unknown key; did you mean 'model'?"),
        ({"budget": {"second": 3}}, "budget.seconds"),
        (
            {"model": {"provider": "scripted", "scrpt": {}}},
            "model.scrpt: unknown key; did you mean 'script'?",
        ),
        (
            {"hooks": [{"event": "pre-tool", "comand": "x"}]},
            "hooks[0].comand: unknown key; did you mean 'command'?",
        ),
        ({"colour": 1}, "colour: unknown key"),
    ):
        with pytest.raises(InputError) as err:
            parse_inputs(doc)
        if line == "budget.seconds":
            assert err.value.problems == ["budget.second: unknown key; did you mean 'seconds'?"]
        else:
            assert line in err.value.problems, err.value.problems
