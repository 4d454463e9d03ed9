"""What a structured answer must match (docs/inputs.md, "output_schema"): the inputs'
`output_schema`, a JSON Schema inline or `@PATH` (relative to the workspace), checked as
draft 2020-12 by `jsonschema`, the maintained validator. A schema that is not one is an
InputError naming the field (exit 2, nothing run).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from .documents import load_document


def load_schema(given: Any, workspace: Path, field: str = "output_schema") -> Any:
    """The schema `given` names (an object or a boolean, inline, or `"@PATH"`), checked;
    InputError naming `field` when it cannot be read or is not a schema."""
    if isinstance(given, str):
        if not given.startswith("@"):
            raise InputError(f"{field}: a JSON Schema (an object) or @PATH to a file holding one")
        path = Path(os.path.expanduser(given[1:]))
        given = load_document(f"@{path if path.is_absolute() else workspace / path}", what=field)
    if not isinstance(given, (dict, bool)):
        raise InputError(f"{field}: a JSON Schema is an object (or true/false)")
    compile_schema(given, field)
    return given


def compile_schema(schema: Any, field: str = "output_schema") -> Any:
    """A draft 2020-12 validator of `schema`; InputError naming `field` when the schema is
    not valid against the metaschema (a `type` that is no type, a `required` that is no
    list, ...) or names a `$ref` it does not hold."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        validator.is_valid(None)  # resolves the root's $refs: a missing one is found now
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise InputError(
            f"{field}: not a JSON Schema (draft 2020-12){' at ' + where if where else ''}: "
            f"{exc.message}"
        ) from None
    except Exception as exc:  # an unresolvable $ref (referencing.exceptions.Unresolvable)
        raise InputError(f"{field}: the schema cannot be used: {exc}") from None
    return validator


def problems(validator: Any, value: Any, limit: int = 10) -> list[str]:
    """What is wrong with `value` by `validator`, one line each (`at /a/0: ...`), at
    most `limit`; [] when it is valid."""
    found = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    lines = []
    for err in found[:limit]:
        where = "/" + "/".join(str(p) for p in err.absolute_path)
        lines.append(f"at {where}: {err.message}")
    if len(found) > limit:
        lines.append(f"and {len(found) - limit} more")
    return lines
