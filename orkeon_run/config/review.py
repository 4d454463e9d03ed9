"""The inputs of `orkeon run review` (docs/inputs.md, "review"): which change, and the
checks it is reviewed against. Checks given here and the workspace's check files
(`.orkeon/checks/*.md`, read by run/steps/review_checks.py once trusted) share one list
of names: a name given twice is refused.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..policy.pathglob import PathGlob
from .defaults import empty_list


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_globs(globs: list[str] | None) -> list[str] | None:
    """Gitignore-style patterns; ValueError naming the one that is not."""
    for pattern in globs or ():
        PathGlob(pattern)  # ValueError names the problem
    return globs


class CheckInput(_Frozen):
    """One check: its `name` (unique), what the reviewer checks, and optionally the paths
    it looks at (a change touching none of them passes it without a model turn)."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[^\n\r]+$")
    instructions: str = Field(min_length=1)
    paths: list[str] | None = None

    @field_validator("paths")
    @classmethod
    def _globs(cls, v: list[str] | None) -> list[str] | None:
        return check_globs(v)


class ReviewInputs(_Frozen):
    """Exactly one of `base` (a ref: the diff from its merge base with HEAD), `commit`
    (that commit's own change) or `uncommitted: true` (the work tree and index against
    HEAD, untracked files included)."""

    base: str | None = Field(default=None, min_length=1)
    commit: str | None = Field(default=None, min_length=1)
    uncommitted: bool = Field(default=False, strict=True)
    checks: list[CheckInput] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _one_change(self) -> ReviewInputs:
        given = [n for n in ("base", "commit") if getattr(self, n) is not None]
        given += ["uncommitted"] if self.uncommitted else []
        if len(given) != 1:
            raise ValueError(
                "give exactly one of base (a ref), commit, or uncommitted: true"
                + (f" (given: {', '.join(given)})" if given else "")
            )
        names = [c.name for c in self.checks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"checks: names repeat: {', '.join(dup)}")
        return self
