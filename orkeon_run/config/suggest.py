""" "Did you mean" for an unknown key: the nearest key the schema allows at that place
(docs/inputs.md). The schema is the document's own JSON Schema (pydantic's), walked along
the error's location through `$ref`, `anyOf`/`oneOf`, arrays and maps; a place whose keys
it cannot tell gets no suggestion."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any


def allowed_keys(schema: dict[str, Any], loc: Sequence[int | str]) -> set[str]:
    """The keys an object at `loc` (the unknown key's parent) may hold."""
    defs = schema.get("$defs", {})
    nodes = _expand(schema, defs)
    for part in loc:
        if isinstance(part, str) and ("[" in part or part.startswith("function-")):
            continue  # pydantic's name for the member of a union it tried (`list[NativeHook]`)
        found = [n for node in nodes for n in _expand_all(_step(node, part), defs)]
        if found or isinstance(part, int):
            nodes = found
        # else: a union's tag in pydantic's location (`model.scripted.script`): the same
        # place, one of its alternatives
    return {k for n in nodes for k in n.get("properties", {})}


def _expand_all(nodes: list[Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for node in nodes for n in _expand(node, defs)]


def _expand(node: Any, defs: dict[str, Any]) -> list[dict[str, Any]]:
    """`node` with its `$ref` followed and its alternatives spread out."""
    if not isinstance(node, dict):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _expand(defs.get(ref.removeprefix("#/$defs/")), defs)
    alts = node.get("anyOf") or node.get("oneOf") or node.get("allOf")
    if isinstance(alts, list):
        return [n for alt in alts for n in _expand(alt, defs)]
    return [node]


def _step(node: dict[str, Any], part: int | str) -> list[Any]:
    if isinstance(part, int):
        items = node.get("items")
        return [items] if isinstance(items, dict) else []
    props = node.get("properties", {})
    if part in props:
        return [props[part]]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):  # a map: the part is one of its keys
        return [extra]
    return []


def did_you_mean(schema: dict[str, Any], loc: Sequence[int | str]) -> str:
    """`; did you mean 'model'?` for the unknown key at the end of `loc`, or ""."""
    if not loc or not isinstance(loc[-1], str):
        return ""
    keys = allowed_keys(schema, loc[:-1])
    near = difflib.get_close_matches(loc[-1], sorted(keys), n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else ""
