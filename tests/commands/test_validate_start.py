"""What `orkeon validate` builds on its way (docs/performance.md, "Start-up, fourth pass"):
of orkeon's pydantic models only the inputs' own validator, once; the defaults of the
inputs' sub-models (`budget`, `gate`, `shell`, `audit`, `instructions`, `model`) made
without building theirs (config/defaults.py, `unchecked`), and the same objects a
`Model()` would be; the settings hooks' and MCP servers' adapters built when a document
first needs them, not at import. Counts and flags, not times: the verdict does not depend
on the machine's speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kit.steps import environ
from pydantic import BaseModel

from orkeon_run.config import inputs
from orkeon_run.config.inputs import parse_inputs
from orkeon_run.config.mcp import parse_servers
from orkeon_run.errors import InputError
from orkeon_run.hooks.claude.sources import parse_hooks
from orkeon_run.limits import BudgetLimits

BUILT = (
    "import contextlib, io, json, sys\n"
    "from orkeon_run.__main__ import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(sys.argv[1:])\n"
    "from pydantic import BaseModel\n"
    "def every(c):\n"
    "    for s in c.__subclasses__():\n        yield s\n        yield from every(s)\n"
    "built = sorted({f'{m.__module__}.{m.__qualname__}' for m in every(BaseModel)\n"
    "    if m.__module__.startswith('orkeon_run') and m.__dict__.get('__pydantic_complete__')})\n"
    "hooks = sys.modules['orkeon_run.hooks.claude.sources']._HOOKS.pydantic_complete\n"
    "servers = sys.modules['orkeon_run.config.mcp']._SERVERS.pydantic_complete\n"
    "print(json.dumps({'rc': rc, 'built': built, 'adapters': [hooks, servers]}))"
)

# The sub-models whose default `Inputs` makes with `unchecked`, and what `Model()` gives.
DEFAULTS = {
    "budget": BudgetLimits,
    "gate": inputs.GateRules,
    "shell": inputs.ShellInputs,
    "audit": inputs.Audit,
    "instructions": inputs.InstructionFiles,
    "model": lambda: inputs.ScriptedModel(provider="scripted"),
}


def test_validate_builds_the_inputs_validator_and_no_other(tmp_path: Path) -> None:
    argv = ["validate", "--inputs", '{"budget": {"seconds": 60}}', "--workspace", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-c", BUILT, *argv],
        capture_output=True, text=True, env=environ(tmp_path), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["rc"] == 0, proc.stderr
    assert out["built"] == ["orkeon_run.config.inputs.Inputs"]
    assert out["adapters"] == [False, False]  # the settings hooks', the MCP servers'


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_a_default_sub_model_is_what_its_constructor_gives(name: str) -> None:
    made = getattr(parse_inputs({}), name)
    expected = DEFAULTS[name]()
    assert made == expected
    assert made.model_fields_set == expected.model_fields_set
    assert made.model_dump() == expected.model_dump()
    # Each document gets an object of its own (a list field is not shared between them).
    assert getattr(parse_inputs({}), name) is not made


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_a_model_made_unchecked_has_no_model_validator(name: str) -> None:
    # `unchecked` skips validation: sound only while no model validator would change or
    # refuse the defaults (config/defaults.py).
    model: type[BaseModel] = type(DEFAULTS[name]())
    assert model.__pydantic_decorators__.model_validators == {}


def test_the_deferred_adapters_still_check_what_they_read() -> None:
    assert parse_servers({"git": {"command": "git-mcp"}})["git"].command == "git-mcp"
    with pytest.raises(InputError, match="mcp_servers"):
        parse_servers({"git": {"command": ""}})
    handler = {"type": "command", "command": "x"}
    hooks = parse_hooks({"hooks": {"PreToolUse": [{"hooks": [handler]}]}}, "s")
    assert list(hooks) == ["PreToolUse"]
    with pytest.raises(InputError, match="s: hooks"):
        parse_hooks({"hooks": {"PreToolUse": [{"hooks": [{"type": "nope"}]}]}}, "s")
