"""The first messages (and follow-ups) the steps send their roles: every text a model reads
from a step, in one place. System prompts live in the crew's markdown files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...config.instructions import InstructionFile

# The spec goes into the planner's first message up to this size; the rest it can read.
SPEC_CHARS = 100_000


def analyst(request: str) -> str:
    return f"The request:\n\n{request.strip()}\n"


def writer(request: str, report: str, spec: str) -> str:
    report = report.strip() or "(the analyst gave no report)"
    return (
        f"The request:\n\n{request.strip()}\n\n"
        f"The analyst's report on the workspace:\n\n{report}\n\n"
        f"Write the spec to {spec}.\n"
    )


def planner(spec_rel: str, spec_text: str, plan_rel: str) -> str:
    if len(spec_text) > SPEC_CHARS:
        spec_text = spec_text[:SPEC_CHARS] + f"\n[… cut here; read {spec_rel} for the rest]"
    return f"The spec ({spec_rel}):\n\n{spec_text.strip()}\n\nWrite the plan to {plan_rel}.\n"


def plan_retry(plan_rel: str, problems: list[str]) -> str:
    lines = "\n".join(f"- {p}" for p in problems)
    return (
        f"The plan in {plan_rel} is not valid:\n{lines}\n\n"
        f"Fix these problems and write the whole plan to {plan_rel} again.\n"
    )


def what_went_wrong(result: dict[str, Any], batch: str, full: str) -> str:
    """From a result document (or `{"audits": [...]}`): the failing audit's output for
    `batch` and the role's own failure, as text."""
    parts: list[str] = []
    for rec in result.get("audits") or []:
        if isinstance(rec, dict) and rec.get("batch") == batch and not rec.get("passed", True):
            lines = [f"The audit after batch {batch} failed."]
            if rec.get("outside_roots"):
                lines.append("Files changed outside the batch's roots:")
                lines += [f"  {p}" for p in rec["outside_roots"]]
            if rec.get("failed_command"):
                lines.append(f"Failed command: {' '.join(rec['failed_command'])}")
            tail = (rec.get("output_tail") or "").strip()
            if tail:
                lines.append(f"Its output (the end):\n{tail}")
            parts.append("\n".join(lines))
    for role in result.get("roles") or []:
        if not isinstance(role, dict) or role.get("name") != full:
            continue
        if role.get("status") != "succeeded":
            line = f"Your earlier attempt ended {role.get('status')}"
            parts.append(line + (f": {role['error']}" if role.get("error") else "."))
    if not parts:
        parts.append("The earlier run recorded no failure for this role; check your work.")
    return "\n\n".join(parts)


def repair(task: str, run_id: str, wrong: str) -> str:
    """A repaired role's first message: its task, then what went wrong."""
    return (
        f"{task.strip()}\n\n"
        f"This task was done before, in run {run_id}, and needs repair.\n\n"
        f"{wrong}\n\n"
        "Find the cause and fix it; the audit will run again when you finish.\n"
    )


# docs/inputs.md, "instructions": the exact wording the roles read.
INSTRUCTIONS_LEAD = (
    "The project's instructions follow, from files in the workspace that the person who "
    "runs orkeon has trusted, as they were when the run started. Follow them where they "
    "apply to your task. A file from a folder deeper in the tree comes later and wins "
    "where they differ. They do not change your task, your tools or the rules above."
)


def project_instructions(files: Sequence[InstructionFile]) -> str:
    """The block appended to a role's system prompt: the lead sentence, then each trusted
    file in a `<project_instructions path="…">` element; "" when there is none."""
    if not files:
        return ""
    parts = [INSTRUCTIONS_LEAD]
    for f in files:
        body = f.text.strip("\n")
        parts.append(f'<project_instructions path="{f.rel}">\n{body}\n</project_instructions>')
    return "\n\n".join(parts) + "\n"
