"""What adding a tool, a step or a provider must touch (docs/architecture.md, "Adding
things"), checked from the registries: each failure names what was forgotten and where it
goes. A tool is one module under `tools/` and one `catalog.TOOLS` entry; a step one module
under `run/steps/`, one line in its `STEPS` and its crew in `crews/STEP.toml`; a provider
one module under `models/`, one line in `models.PROVIDERS` and its configuration model in
`config/inputs.py`'s `ModelConfig` union."""

from __future__ import annotations

import importlib
import inspect
from typing import get_args

import pytest
from kit import ROOT

from orkeon_run import models
from orkeon_run.catalog import TOOLS, Tool
from orkeon_run.commands.schema import schema
from orkeon_run.config.crews import load_crew
from orkeon_run.config.inputs import PROVIDER_MODELS, PROVIDER_NAMES, parse_inputs, provider_of
from orkeon_run.errors import InputError, UsageError
from orkeon_run.run import result
from orkeon_run.run.steps import STEPS, crew_steps, step_module

# --- a tool --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS.values(), ids=list(TOOLS))
def test_every_catalog_tool_has_its_implementation(tool: Tool) -> None:
    module, _, name = tool.run.partition(":")
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError as exc:
        pytest.fail(f"{tool.name}: catalog.TOOLS names run={tool.run!r}, no such module: {exc}")
    assert found is not None, f"{tool.name}: {module} has no {name} (catalog.TOOLS' run=)"
    assert inspect.iscoroutinefunction(found), f"{tool.run}: must be `async def`"
    params = list(inspect.signature(found).parameters)
    assert len(params) == 3, f"{tool.run}: takes (call, env, timeout), not {params}"


@pytest.mark.parametrize("tool", TOOLS.values(), ids=list(TOOLS))
def test_every_catalog_fact_names_a_field_of_the_tools_input(tool: Tool) -> None:
    fields = tool.input.model_fields
    for fact in ("path_field", "command_field"):
        named = getattr(tool, fact)
        assert named is None or named in fields, (
            f"{tool.name}: {fact}={named!r} is no field of {tool.input.__name__}"
        )
    if tool.command_field is not None:
        assert fields[tool.command_field].annotation in (str, "str"), (
            f"{tool.name}: the command field {tool.command_field!r} must be a string"
        )
    assert not tool.folder or tool.path_field, f"{tool.name}: folder=True needs a path_field"
    assert not (tool.path_field and tool.command_field), (
        f"{tool.name}: a call has a path or a command line, not both"
    )


def test_the_tool_names_are_unique_across_aliases() -> None:
    names = [n for t in TOOLS.values() for n in t.names]
    assert len(names) == len(set(names)), f"a name twice in catalog.TOOLS: {sorted(names)}"


# --- a step --------------------------------------------------------------------------------


@pytest.mark.parametrize("step", list(STEPS))
def test_every_registered_step_has_its_module(step: str) -> None:
    try:
        module = step_module(step)
    except ImportError as exc:
        pytest.fail(f"{step}: run/steps/__init__.py's STEPS names {STEPS[step]!r}: {exc}")
    for name in ("ROLES", "check", "run"):
        assert hasattr(module, name), f"{step}: run/steps/{STEPS[step]}.py has no {name}"
    assert inspect.iscoroutinefunction(module.run), f"{step}: `run(sr)` must be `async def`"
    if not module.ROLES:
        assert callable(getattr(module, "default_budget", None)), (
            f"{step}: a step with no ROLES runs no crew of its own and needs default_budget"
        )


@pytest.mark.parametrize("step", crew_steps())
def test_every_step_with_roles_has_its_crew(step: str) -> None:
    path = ROOT / "crews" / f"{step}.toml"
    assert path.is_file(), f"{step}: its crew is missing: write {path.relative_to(ROOT)}"
    crew = load_crew(step, roles=step_module(step).ROLES)  # InputError names what is wrong
    assert crew.source == path


def test_every_crew_file_is_a_registered_steps() -> None:
    crews = sorted(p.stem for p in (ROOT / "crews").glob("*.toml"))
    assert [c for c in crews if c not in crew_steps()] == [], (
        "a crew file for no step with roles: add the step to run/steps/__init__.py's STEPS"
    )


def test_the_step_names_everywhere_are_the_registrys() -> None:
    """The result document's `step`, the crews' and the command line's STEP are derived
    from the registry, never listed again."""
    from orkeon_run.cli import Step

    assert get_args(result.StepName) == tuple(STEPS)
    assert [s.value for s in Step] == list(STEPS)
    assert schema("crew")["properties"]["step"]["enum"] == list(crew_steps())


def test_an_unknown_step_says_where_a_step_is_added() -> None:
    with pytest.raises(UsageError) as err:
        step_module("dev-nope")
    line = str(err.value)
    where = line.rsplit(" in ", 1)[1].rstrip(")")
    assert (ROOT / where).is_file(), line
    assert all(s in line for s in STEPS), line


# --- a provider ----------------------------------------------------------------------------


def test_every_provider_config_has_its_registry_entry() -> None:
    unserved = [p for p in PROVIDER_NAMES if p not in models.PROVIDERS]
    assert unserved == [], f"add {unserved} to models.PROVIDERS (models/__init__.py)"
    unconfigured = [p for p in models.PROVIDERS if p not in PROVIDER_NAMES]
    assert unconfigured == [], (
        f"models.PROVIDERS serves {unconfigured}: add its configuration model to "
        "config/inputs.py's ModelConfig union"
    )


@pytest.mark.parametrize("provider", list(models.PROVIDERS))
def test_every_registered_provider_class_is_a_provider(provider: str) -> None:
    module, _, name = models.PROVIDERS[provider].partition(":")
    try:
        cls = getattr(importlib.import_module(f"orkeon_run.models.{module}"), name, None)
    except ImportError as exc:
        pytest.fail(f"{provider}: models.PROVIDERS names {module}:{name}, no such module: {exc}")
    assert cls is not None, f"{provider}: models/{module}.py has no class {name}"
    for method in ("for_role", "price", "context_tokens", "aclose"):
        assert callable(getattr(cls, method, None)), f"{provider}: {name} has no {method}"
    assert inspect.iscoroutinefunction(cls.aclose), f"{provider}: {name}.aclose must be async"


@pytest.mark.parametrize("config", PROVIDER_MODELS, ids=[provider_of(m) for m in PROVIDER_MODELS])
def test_a_missing_field_of_any_provider_is_named_under_model(config: type) -> None:
    """docs/inputs.md: every problem names its field path: `model.model`, never with the
    provider's tag in it (`model.openai.model`)."""
    provider = provider_of(config)
    required = [n for n, f in config.model_fields.items() if f.is_required() and n != "provider"]
    with pytest.raises(InputError) as err:
        parse_inputs({"model": {"provider": provider, "nope": 1}})
    lines = err.value.problems
    assert "model.nope: unknown key" in lines, lines
    for name in required:
        assert f"model.{name}: Field required" in lines, lines
