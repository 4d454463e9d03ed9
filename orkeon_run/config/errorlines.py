"""A pydantic validation error as orkeon's one line per problem (`field.path: message`,
docs/inputs.md): the leaf every reader of a configuration document imports."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

_ITEM_PROBLEM = re.compile(r"^\[(\d+)\]\.(\w+): (.*)$", re.S)


def field_path(loc: tuple[int | str, ...]) -> str:
    """`("hooks", 1, "command")` -> `hooks[1].command`, skipping pydantic's union tags."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in UNION_TAGS or part.startswith(("function-", "list[", "dict[")):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "inputs"


# The tags pydantic puts in a location for the member of a union a value was tried as
# (`plan`'s); config/inputs.py adds the providers' and their models' where it defines them.
UNION_TAGS: set[str] = {"str", "bool", "Plan"}


def error_lines(
    exc: ValidationError,
    prefix: str = "",
    schema: Callable[[], dict[str, Any]] | None = None,
) -> list[str]:
    """One line per problem, `field.path: message`, sorted and without repeats. `schema`
    (the document's JSON Schema, made only when a key is unknown) adds the nearest allowed
    key to an `unknown key` line: `modl: unknown key; did you mean 'model'?`."""
    found: list[tuple[str, str, str]] = []
    made: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False):
        path = field_path(tuple(err["loc"]))
        if prefix:
            path = f"{prefix}.{path}" if path != "inputs" else prefix
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
            if schema is not None:
                # Only a document with an unknown key needs the suggestion's search.
                from .suggest import did_you_mean

                made = made or [schema()]
                msg += did_you_mean(made[0], tuple(err["loc"]))
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
            if m := _ITEM_PROBLEM.match(msg):  # a list's validator naming an item's key
                path, msg = f"{path}[{m[1]}].{m[2]}", m[3]
        found.append((path, err["type"], msg))
    # A value that failed every member of a union reports a type mismatch for the members
    # it was not meant to be; when a deeper problem exists under the same path, that
    # deeper one is the real news.
    lines: set[str] = set()
    for path, kind, msg in found:
        deeper = any(p.startswith((path + ".", path + "[")) for p, _, _ in found)
        if kind.endswith("_type") and deeper:
            continue
        lines.add(f"{path}: {msg}")
    return sorted(lines)
