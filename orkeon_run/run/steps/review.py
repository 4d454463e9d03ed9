"""review: the crew's `reviewer` reads a change (`review.base` | `review.commit` |
`review.uncommitted`, review_change.py) and judges it against each check (review_checks.py),
one conversation per check (role `reviewer/SLUG`, at most `concurrency` at once), read-only:
file tools and git's reading subcommands, no roots (crews/review.toml). Each check's answer
goes through answer.py against CHECK_SCHEMA; a finding whose path and lines are not on the
change's new side is dropped with a `review.finding_dropped` event; a check never answered
validly is `error`, never `pass`; a check whose `paths` the change does not touch passes
without a model turn. The result's `checks`; the step succeeds only when every check passed
(a failed check: kind `audit`, one never answered: kind `output`; exit 1 either way).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio

from ... import logs
from ...config.answers import compile_schema
from ...config.inputs import Inputs
from ...config.review import CheckInput
from ...config.sources import Sources
from ...errors import InputError, StepError
from ...vocabulary import ErrorKind
from ..context import StepOutcome, StepRun
from . import answer
from .outcome import error_outcome, finish
from .review_change import Change, git_of, read_change, resolve
from .review_checks import CHECK_SCHEMA, applies, load_checks
from .roles import crew_of, role_agent, role_context

ROLES = ("reviewer",)
# The diff goes into each check's first message up to this size; the role reads the rest.
DIFF_CHARS = 60_000


def check(
    inputs: Inputs, workspace: Path, pinned: object = None, sources: Sources | None = None
) -> None:
    if inputs.review is None:
        raise InputError("review: review needs {base: REF} | {commit: REF} | {uncommitted: true}")
    resolve(inputs.review, workspace)
    load_checks(inputs.review, workspace, logs.warn, sources)


def slugs(checks: list[CheckInput]) -> list[str]:
    """One role name part per check: its name in lower case, other characters as `-`."""
    out: list[str] = []
    for c in checks:
        base = re.sub(r"[^a-z0-9_.-]+", "-", c.name.lower()).strip("-.") or "check"
        slug, n = base, 1
        while slug in out:
            n += 1
            slug = f"{base}-{n}"
        out.append(slug)
    return out


def first_message(check: CheckInput, change: Change) -> str:
    diff = change.diff
    if len(diff) > DIFF_CHARS:
        diff = diff[:DIFF_CHARS] + f"\n[… cut here; run `{change.command}` for the rest]\n"
    paths = f" It looks only at: {', '.join(check.paths)}." if check.paths else ""
    return (
        f"Review the change against the check {check.name!r}.{paths}\n\n"
        f"The check's instructions:\n\n{check.instructions.strip()}\n\n"
        f"The change ({change.command}; files: {', '.join(change.paths) or 'none'}):\n\n"
        f"```diff\n{diff}```\n\n"
        "Answer with one JSON object alone: `verdict` (pass | fail | error), `summary`, and "
        "`findings` [{path, line, end_line?, severity: error|warning|notice, message, "
        "suggestion?}], each finding on lines of the change's new side; `suggestion` is "
        "the text those lines should read instead.\n"
    )


def kept_findings(
    sr: StepRun, name: str, findings: list[dict[str, Any]], change: Change
) -> list[dict[str, Any]]:
    """The findings that point into the change; each other one dropped with a warning."""
    kept = []
    for f in findings:
        if change.holds(f["path"], f["line"], f.get("end_line")):
            kept.append(f)
            continue
        where = f"{f['path']}:{f['line']}" + (f"-{f['end_line']}" if f.get("end_line") else "")
        reason = f"{where} is not a line of the change"
        sr.events.emit(
            "review.finding_dropped",
            step=sr.step,
            check=name,
            path=f["path"],
            line=f["line"],
            reason=reason,
        )
        logs.warn(f"check {name}: a finding on {where} is dropped: not a line of the change")
    return kept


async def run(sr: StepRun) -> StepOutcome:
    review = sr.inputs.review
    assert review is not None  # check() made sure
    crew = crew_of(sr)
    how = sr.audit_git()
    try:  # checked before the run; what changed since is the step's error
        # One runner for both: it reads the repository's filter drivers once.
        git = git_of(sr.workspace, how)
        change = read_change(resolve(review, sr.workspace, git=git), sr.workspace, how, git)
        checks = load_checks(review, sr.workspace, logs.warn, sr.config.sources)
    except InputError as exc:
        return error_outcome(StepError(str(exc)))
    validator = compile_schema(CHECK_SCHEMA, "review")
    records: list[dict[str, Any] | None] = [None] * len(checks)
    roles: list[Any] = [None] * len(checks)
    limiter = anyio.CapacityLimiter(sr.inputs.concurrency)
    pipeline = sr.pipeline(crew.rule_sets_for("reviewer", {}))

    async def one(i: int, check: CheckInput, slug: str) -> None:
        if not applies(check, change.paths):
            summary = "the change touches none of the check's paths"
            records[i] = {"name": check.name, "verdict": "pass", "summary": summary, "findings": []}
            return
        async with limiter:
            ctx = role_context(sr, f"reviewer/{slug}")
            variables = {"check": check.name}
            async with role_agent(
                sr,
                crew,
                "reviewer",
                ctx,
                pipeline,
                variables,
                resume=sr.resume,
                answer_schema=CHECK_SCHEMA,
            ) as agent:
                prompt = first_message(check, change)
                retries = sr.inputs.output_retries
                got = await answer.ask(sr, agent, prompt, validator, retries, check=check.name)
        roles[i] = got.role
        if got.valid:
            v = got.value
            record = {
                "name": check.name,
                "verdict": v["verdict"],
                "summary": v["summary"],
                "findings": kept_findings(sr, check.name, v["findings"], change),
            }
        else:
            why = got.error if got.role.status == "succeeded" else f"the reviewer {got.role.status}"
            record = {
                "name": check.name,
                "verdict": "error",
                "summary": f"never answered: {why}",
                "findings": [],
            }
        records[i] = record
        sr.events.emit(
            "review.check",
            step=sr.step,
            check=check.name,
            verdict=record["verdict"],
            findings=len(record["findings"]),
        )

    async with anyio.create_task_group() as tg:
        for i, (check, slug) in enumerate(zip(checks, slugs(checks), strict=True)):
            tg.start_soon(one, i, check, slug)
    done = [r for r in records if r is not None]
    ran = [r for r in roles if r is not None]
    failed = [r["name"] for r in done if r["verdict"] == "fail"]
    errored = [r["name"] for r in done if r["verdict"] == "error"]
    error: str | None = None
    kind: ErrorKind = "audit"
    if errored:
        error, kind = f"check never answered: {', '.join(errored)}", "output"
    if failed:
        error = "; ".join(p for p in (f"check failed: {', '.join(failed)}", error) if p)
    outcome = finish(sr, ran, error=error, kind=kind)
    outcome.fields["checks"] = done
    return outcome
