"""The checks a review runs (docs/inputs.md, "review"): `review.checks` in the inputs, then
the workspace's check files, `.orkeon/checks/*.md` in name order, each a Markdown body (the
instructions) under a YAML front matter with `name` and optionally `paths` (globs). The
files count only once trusted, as the workspace's settings do (config/trust.py; untrusted:
left out with a warning). Each check's answer is checked against CHECK_SCHEMA.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...config.inputs import error_lines
from ...config.review import CheckInput, ReviewInputs
from ...config.sources import Sources
from ...config.trust import checks_dir, checks_trusted
from ...errors import InputError
from ...policy.pathglob import PathGlob

# What the reviewer answers for one check (the step adds the check's name).
CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {
            "enum": ["pass", "fail", "error"],
            "description": "fail: the change breaks the check; error: you could not tell",
        },
        "summary": {"type": "string", "minLength": 1},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                    "severity": {"enum": ["error", "warning", "notice"]},
                    "message": {"type": "string", "minLength": 1},
                    "suggestion": {"type": "string"},
                },
                "required": ["path", "line", "severity", "message"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["verdict", "summary", "findings"],
    "additionalProperties": False,
}


def front_matter(path: Path) -> CheckInput:
    """A check file as a check; InputError naming the file when its front matter is
    missing, not YAML, or not a check's."""
    import yaml  # PyYAML: imported only when a check file is read

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    lines = text.split("\n")
    if lines[0].strip() != "---" or "---" not in [x.strip() for x in lines[1:]]:
        raise InputError(f"{path}: no front matter (a first line '---', `name: ...`, '---')")
    end = 1 + [x.strip() for x in lines[1:]].index("---")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise InputError(
            f"{path}: the front matter is not YAML: {' '.join(str(exc).split())}"
        ) from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: the front matter must be a mapping with `name`")
    unknown = sorted(set(map(str, meta)) - {"name", "paths"})
    if unknown:
        raise InputError(f"{path}: unknown key in the front matter: {', '.join(unknown)}")
    try:
        body = "\n".join(lines[end + 1 :]).strip()
        return CheckInput.model_validate(
            {"name": meta.get("name"), "instructions": body, "paths": meta.get("paths")}
        )
    except ValidationError as exc:
        raise InputError(error_lines(exc, prefix=str(path))) from None


def load_checks(
    review: ReviewInputs,
    workspace: Path,
    warn: Callable[[str], None],
    sources: Sources | None = None,
) -> list[CheckInput]:
    """The inputs' checks, then the trusted check files' (none when `sources` reads no
    check folder: a bare run, config/sources.py); InputError for a broken file, names given
    twice, or no check at all."""
    checks = list(review.checks)
    folder = checks_dir(workspace) if sources is None else sources.checks
    files = []
    if folder is not None and folder.is_dir():
        files = sorted(p for p in folder.glob("*.md") if p.is_file())
    if files and not checks_trusted(workspace):
        warn(
            f"{folder}: {len(files)} check file(s) left out: not trusted (run `orkeon hooks "
            "trust` in the workspace, or set ORKEON_TRUST_PROJECT_HOOKS=1 in CI)"
        )
        files = []
    seen = {c.name: "review.checks" for c in checks}
    for path in files:
        check = front_matter(path)
        if check.name in seen:
            raise InputError(
                f"{path}: check name {check.name!r} is given twice (also in {seen[check.name]})"
            )
        seen[check.name] = str(path)
        checks.append(check)
    if not checks:
        raise InputError(
            "review.checks: no check to run (give review.checks, or trusted .orkeon/checks/*.md)"
        )
    return checks


def applies(check: CheckInput, paths: list[str]) -> bool:
    """Whether the change touches a path the check looks at (no `paths`: every one)."""
    if not check.paths:
        return True
    globs = [PathGlob(p) for p in check.paths]
    return any(g.match(path) for g in globs for path in paths)
