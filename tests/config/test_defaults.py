"""The list fields' default factory (orkeon_run/config/defaults.py; docs/performance.md,
"Start-up, after the third round's merges"): no model on a run's path names the built-in
`list` as a factory (pydantic would parse its text signature with `tokenize` for each
field while the model is built), and each instance still gets a list of its own."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from orkeon_run.config import crews, inputs, mcp, review, settings_hooks
from orkeon_run.config.inputs import GateRules


def models(module: Any) -> list[type[BaseModel]]:
    return [
        m for m in vars(module).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == module.__name__
    ]  # fmt: skip


def test_no_field_takes_the_builtin_list_as_its_factory() -> None:
    found = [
        f"{m.__module__}.{m.__name__}.{name}"
        for module in (inputs, settings_hooks, mcp, review, crews)
        for m in models(module)
        for name, field in m.model_fields.items()
        if field.default_factory is list
    ]
    assert found == []


def test_each_instance_gets_a_list_of_its_own() -> None:
    a, b = GateRules(), GateRules()
    assert a.allow == b.allow == [] and a.allow is not b.allow
