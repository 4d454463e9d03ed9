"""Default factories for the fields of the inputs' and crews' models.

When pydantic builds a model it asks each field's `default_factory` whether it takes the
validated data (`inspect.signature`). For the built-in `list` that means parsing its text
signature with `tokenize`, 0.15 to 0.4 ms a field and 3 ms the first time: 6 to 7 ms of
every run's start for the 15 list fields on its path (docs/performance.md, "Start-up, after
the third round's merges"). A Python function answers at once, and the JSON Schemas are
the same (pydantic shows no default made by a factory).

A field whose default is a model of its own (`budget`, `gate`, `audit`, ...) gets it from
`unchecked`: the model's `model_construct()`, not `Model()`. Both give the same object
(its fields' defaults: pydantic validates no default, and these models have no model
validator), but `Model()` first builds that model's own validator (`defer_build`), which
nothing else uses when the model that holds it is validated (its validator holds the
sub-model's schema): 0.1 to 0.8 ms each, 2 ms for the six of an `orkeon validate`
(docs/performance.md, "Start-up, fourth pass").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


def empty_list() -> list[Any]:
    """A new empty list: a list field's default."""
    return []


def unchecked(model: type[M], **values: Any) -> Callable[[], M]:
    """A default factory for a field of type `model`: `model(**values)` without building
    `model`'s validator. Only for a model with no model validator and `values` valid as
    they are (nothing checks them)."""

    def make() -> M:
        return model.model_construct(**values)

    return make


__all__ = ["empty_list", "unchecked"]
