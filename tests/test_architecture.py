"""The package's shape (docs/architecture.md): folders are layers, each importing only from
the layers below it; no import cycles; no module over 400 lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import ROOT

PACKAGE = ROOT / "orkeon_run"

# Bottom first. A module belongs to the layer of its first name below the package.
LAYERS: list[set[str]] = [
    {"errors", "vocabulary", "catalog", "calls", "ledger", "events", "jsonio", "proc",
     "environ", "logs", "gitpatch", "units", "__init__"},
    {"policy"},
    {"config"},
    {"models"},
    {"tools"},
    {"hooks"},
    {"pipeline"},
    {"agent"},
    {"run"},
    {"report"},
    {"jobs"},
    {"commands"},
    {"cli", "__main__"},
]  # fmt: skip
MAX_LINES = 400


def layer_of(module: str) -> int:
    head = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"{module} is in no layer: add its folder to LAYERS")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), path


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str, path: Path, *, top_level_only: bool) -> Iterator[tuple[str, int]]:
    """The package modules `module` imports at run time (not under TYPE_CHECKING), with
    their line numbers; with `top_level_only`, only those imported when it is loaded."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(nodes: list[ast.stmt]) -> Iterator[tuple[str, int]]:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node):
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.startswith("orkeon_run"):
                    for alias in node.names:
                        full = f"{target}.{alias.name}"
                        yield (full if _exists(full) else target), node.lineno
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("orkeon_run"):
                        yield alias.name, node.lineno
            if top_level_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.AST):
                    yield from visit(inner)  # type: ignore[arg-type]

    yield from visit(tree.body)


def _exists(module: str) -> bool:
    rel = Path(*module.split("."))
    root = PACKAGE.parent
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def test_every_module_imports_only_from_its_layer_and_below() -> None:
    wrong = []
    for module, path in modules():
        mine = layer_of(module)
        for target, line in imports(module, path, top_level_only=False):
            if layer_of(target) > mine:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} -> {target}")
    assert not wrong, "imports from a higher layer:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    graph = {m: {t for t, _ in imports(m, p, top_level_only=True)} for m, p in modules()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == node or nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                walk(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    real = [c for c in cycles if not all(x.startswith(c[0]) or c[0].startswith(x) for x in c)]
    assert not real, "\n".join(" -> ".join(c) for c in real)


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=lambda x: str(x))
def test_no_module_is_over_400_lines(module: str, path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{module}: {lines} lines; split it (docs/architecture.md)"
