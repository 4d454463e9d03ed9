"""pipeline: dev-spec, dev-plan and dev-batches in one run; on a failed batch, tasks-repair
for its roles, then dev-batches resumed (docs/output.md, "A pipeline's result"; docs/ci.md).

Each step is a run of its own, through the runner's own pieces (`open_run`, `execute`) in
this process, in `RUN_DIR/steps/NAME/` (`dev-spec`, `dev-plan`, `dev-batches`,
`tasks-repair-1`, ...): the files of any run directory, so `orkeon report` reads each.
Every event of every step is also written to the pipeline's own `events.jsonl` as it
happens (and so reaches `--output stream-json`, the progress view and the traces), except
a step's `run.start` and `result`, which become `step.start` and `step.end`: the
pipeline's log has one `run.start` and one `result` per attempt, like any run's.

One budget for the whole pipeline: each step runs on what is left of it (its inputs say
so), and what it spent is added to the pipeline's ledger when it ends.

A failed batch (dev-batches stopped at it, `failed_batch`, exit 1, no role that failed:
its provider failing would fail a repair too) gets at most `repair.attempts` rounds (default 1). A round repairs, one after another, the batch's roles that did not
succeed; when every role succeeded and the audit failed, each of its roles in plan order
until one repair's own audit passes. Then `mark_repaired` and dev-batches resumes: the
batch is audited again as it stands (against the workspace as it was when it first
began), and the later batches run.

state.json: `phase` (the step to run or resume next, `repair`, or `done`), `steps` (every
step run's entry, as it ended), `rounds` (repair rounds per batch), `repairs` (how many
tasks-repair runs were started: the last one's number), `repair` (the round under way:
its batch, roles, the names of the repairs started, how many ended, their records). A
`--resume` goes on from `phase`: a step that succeeded is not run again, one that did not
is resumed in its directory, as `orkeon run STEP --resume` would.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...config.crews import load_crew
from ...config.inputs import Inputs, Plan
from ...errors import EXIT_PROVIDER, InputError, UsageError
from ...limits import BudgetLimits
from ...vocabulary import error_message, spent_text
from ..context import StepOutcome, StepRun
from ..opening import open_run
from ..prepare import load_plan
from ..runner import execute
from . import spec, step_module
from .batches import failed_batch, mark_repaired
from .roles import SavedRole

ROLES: tuple[str, ...] = ()
STAGES = ("dev-spec", "dev-plan", "dev-batches")
STEPS_DIR = "steps"


def check(inputs: Inputs, workspace: Path, pinned: object = None, sources: object = None) -> None:
    spec.check(inputs, workspace)
    if isinstance(inputs.plan, Plan):
        raise InputError(
            "plan: the pipeline's dev-plan writes the plan: give its path "
            "(default .orkeon/plan.json), not a plan object"
        )


def default_budget(workspace: Path | None) -> BudgetLimits:
    """The budget when neither the inputs nor a knob give one: the dev-spec, dev-plan and
    dev-batches crews' budgets added up (5400 s for the built-in crews); a limit one of
    them does not set is not set. Loading the crews, tasks-repair's too, checks them all
    before anything runs. `workspace`: the one whose crews count (None: the built-in)."""
    crews = [load_crew(s, workspace, roles=step_module(s).ROLES) for s in STAGES]
    load_crew("tasks-repair", workspace, roles=step_module("tasks-repair").ROLES)
    total: dict[str, Any] = {}
    for key in ("seconds", "turns", "tokens", "usd"):
        values = [getattr(c.budget, key) for c in crews]
        total[key] = None if any(v is None for v in values) else sum(values)
    return BudgetLimits(**total)


class StageError(Exception):
    """A step could not start (its inputs do not hold, e.g. a plan dev-plan left broken)."""


class Pipeline:
    """The pipeline's state (state.json) and what it did so far."""

    def __init__(self, sr: StepRun) -> None:
        self.sr = sr
        self.state = sr.state
        self.state.setdefault("phase", STAGES[0])
        self.state.setdefault("steps", [])
        self.state.setdefault("rounds", {})
        self.state.setdefault("repairs", 0)

    @property
    def phase(self) -> str:
        return str(self.state["phase"])

    def save(self, **changes: Any) -> None:
        self.sr.save_state(**changes)

    def last(self, name: str) -> dict[str, Any] | None:
        for entry in reversed(self.state["steps"]):
            if entry["name"] == name:
                return dict(entry)
        return None

    def record(self, name: str, result: dict[str, Any]) -> None:
        entry = {"name": name, "run_dir": f"{STEPS_DIR}/{name}", **result}
        self.save(steps=[*self.state["steps"], entry])

    # --- running one step --------------------------------------------------------------

    async def stage(self, name: str, step: str, extra: dict[str, Any]) -> dict[str, Any] | None:
        """Run (or resume) the step `step` in `steps/NAME` on what is left of the budget;
        its result. None: the budget was spent before it could start."""
        done = self.last(name)
        if done is not None and done["status"] == "succeeded":
            return done  # an earlier attempt finished it (killed before `phase` moved on)
        sr = self.sr
        if sr.ledger.refuse():
            return None

        changed = sr.unpinned  # each step pins at its start: the pipeline's pins hold first
        if changed:
            why = f"{', '.join(changed)} changed since the run started (pinned files)"
            raise StageError(f"{name} could not start: {why}")
        rd = sr.run_dir / STEPS_DIR / name
        doc = {**sr.config.doc, **extra, "budget": sr.ledger.left().to_json()}
        doc.pop("patch", None)  # the pipeline writes the one patch, of all its steps
        again = (rd / "inputs.json").is_file()
        try:
            opened = open_run(
                step,
                doc,
                workspace=None,
                run_dir=None if again else str(rd),
                resume_dir=str(rd) if again else None,
                stream=None,
                environ=sr.environ,
                nested=True,
                bare=sr.config.bare,
            )
        except UsageError as exc:
            problems = exc.problems if isinstance(exc, InputError) else [str(exc)]
            raise StageError(f"{name} could not start: {'; '.join(problems)}") from None
        # What the pipeline's sandboxes hide, its steps' hide too (a job's output folder).
        hidden = sr.config.confinement.hidden
        opened.config = replace(opened.config, confinement=opened.config.confinement.hiding(hidden))
        # The instruction files as the pipeline read them at its start: one a step's role
        # changed or wrote since is not given (config/instructions.py).
        own = opened.config.instructions.since(sr.config.instructions.saved)
        opened.config = replace(opened.config, instructions=own)
        opened.events.listeners.append(self._forward(name, rd))
        return await execute(opened, watch_signals=False)

    def _forward(self, name: str, rd: Path) -> Any:
        """A listener on the step's own log: each event into the pipeline's log, `run.start`
        and `result` as `step.start` and `step.end`; at its result, the step's spending
        into the pipeline's ledger and its entry into state.json (also when it was cut
        short: the runner still writes its result then)."""
        sr = self.sr

        def forward(event: dict[str, Any]) -> None:
            kind = event["type"]
            if kind == "run.start":
                fields = {k: v for k, v in event.items() if k not in ("type", "ts", "workspace")}
                sr.events.emit("step.start", name=name, **fields)
            elif kind == "result":
                result = {k: v for k, v in event.items() if k not in ("type", "ts")}
                sr.ledger.add_spent(result["budget"])
                self.record(name, result)
                sr.events.emit("step.end", name=name, **{**result, "run_dir": str(rd)})
            else:
                sr.events.write(event)

        return forward

    # --- the order of things -----------------------------------------------------------

    async def run(self) -> StepOutcome:
        while True:
            phase = self.phase
            if phase == "done":
                return self.outcome()
            if phase == "repair":
                stopped = await self.repair_round()
                if stopped is not None:
                    return stopped
                continue
            result = await self.stage(phase, phase, {})
            if result is None:
                return self.spent(phase)
            if result["status"] == "succeeded":
                following = STAGES.index(phase) + 1
                self.save(phase=STAGES[following] if following < len(STAGES) else "done")
                continue
            # Exit 1: a role or the audit failed. A repair cannot mend a budget, a
            # provider that is down (exit 4) or a step that could not start its work.
            repairable = result["status"] == "failed" and result["exit_code"] == 1
            if phase == "dev-batches" and repairable and self.plan_round():
                continue
            return self.outcome()

    def plan_round(self) -> bool:
        """Start a round of repairs for the batch dev-batches stopped at, if it may have
        one; False when it may not (no batch to repair, or its rounds are used up)."""
        sr = self.sr
        stopped = failed_batch(sr.run_dir / STEPS_DIR / "dev-batches", sr.environ)
        attempts = sr.inputs.repair.attempts if sr.inputs.repair is not None else 1
        if stopped is None:
            return False
        batch = stopped["batch"]
        rounds = dict(self.state["rounds"])
        if rounds.get(batch, 0) >= attempts:
            return False
        order = self.batch_roles(batch) or list(stopped["roles"])
        records = stopped["roles"]
        statuses = [(records.get(r) or {}).get("status") for r in order]
        if "failed" in statuses:
            # A role's provider failed, its answers kept being cut, or it crashed: a
            # repair would meet the same.
            return False
        failed = [r for r, status in zip(order, statuses, strict=True) if status != "succeeded"]
        rounds[batch] = rounds.get(batch, 0) + 1
        roles = failed or order  # every role succeeded: the audit failed
        self.save(
            phase="repair",
            rounds=rounds,
            repair={"batch": batch, "roles": roles, "names": [], "next": 0,
                    "until_passed": not failed, "records": {}},
        )  # fmt: skip
        return True

    def batch_roles(self, batch: str) -> list[str]:
        """The batch's roles by full name, in plan order ([] when the plan cannot be read)."""
        sr = self.sr
        try:
            plan, _ = load_plan(sr.workspace, sr.inputs.plan)
        except InputError:
            return []
        for b in plan.batches:
            if b.name == batch:
                return [f"{b.name}/{r.name}" for r in b.roles]
        return []

    async def repair_round(self) -> StepOutcome | None:
        """Run the round's repairs that have not run; then mark them in dev-batches' state
        and move back to dev-batches. An outcome when the pipeline stops here."""
        batches_dir = self.sr.run_dir / STEPS_DIR / "dev-batches"
        rp = dict(self.state["repair"])
        while rp["next"] < len(rp["roles"]):
            i = rp["next"]
            role = rp["roles"][i]
            if len(rp["names"]) <= i:  # a new repair (else: resuming the one cut short)
                repairs = int(self.state["repairs"]) + 1
                rp = {**rp, "names": [*rp["names"], f"tasks-repair-{repairs}"]}
                self.save(repairs=repairs, repair=rp)
            name = rp["names"][i]
            extra = {"repair": {"run": str(batches_dir), "role": role}}
            result = await self.stage(name, "tasks-repair", extra)
            if result is None:
                return self.spent(name)
            if (
                result["status"] not in ("succeeded", "failed")
                or result["exit_code"] == EXIT_PROVIDER
            ):
                # Budget spent, it could not start its work, or its provider failed (exit
                # 4): the next repair would meet the same.
                return self.outcome()
            records = dict(rp["records"])
            for record in result["roles"]:
                records[record["name"]] = record
            audit_passed = all(a.get("passed") for a in result["audits"])
            rp = {**rp, "next": i + 1, "records": records}
            if rp["until_passed"] and audit_passed and result["status"] == "succeeded":
                rp["next"] = len(rp["roles"])  # the build and tests pass again: enough
            self.save(repair=rp)
        mark_repaired(batches_dir, rp["records"], self.sr.environ)
        self.save(phase="dev-batches", repair=None)
        return None

    # --- the outcome -------------------------------------------------------------------

    def spent(self, name: str) -> StepOutcome:
        which = self.sr.ledger.exhausted or self.sr.ledger.spent() or "seconds"
        return self.outcome("budget_exhausted", f"{spent_text(which)}: {name} did not start")

    def outcome(
        self, status: str | None = None, error: str | None = None, kind: str | None = None
    ) -> StepOutcome:
        """The pipeline's outcome from its steps: the last step's status, error (named by
        the step) and error kind (so its exit code: 4 when its provider failed), every role
        once (its last record), the spec and plan of the steps that made them, the last
        dev-batches run's audits, and every step's entry."""
        entries: list[dict[str, Any]] = list(self.state["steps"])
        last = entries[-1] if entries else None
        if status is None:
            status = "succeeded" if self.phase == "done" else (last or {}).get("status", "error")
            if status != "succeeded" and last is not None and last.get("error"):
                error = f"{last['name']}: {error_message(last['error'])}{self.rounds_note(last)}"
                if isinstance(last["error"], dict):
                    kind = last["error"].get("kind")
        roles: dict[str, dict[str, Any]] = {}
        artifacts: dict[str, str] = {}
        audits: list[dict[str, Any]] = []
        for entry in entries:
            for record in entry.get("roles") or []:
                roles[record["name"]] = record  # the last record, in its first place
            if entry["status"] == "succeeded":
                artifacts.update(entry.get("artifacts") or {})
            if entry["step"] == "dev-batches":
                audits = list(entry.get("audits") or [])
        return StepOutcome(
            status=status,  # type: ignore[arg-type]
            roles=[SavedRole(r) for r in roles.values()],  # type: ignore[misc]
            artifacts=artifacts,
            audits=audits,
            error=error,
            steps=entries,
            kind=kind,  # type: ignore[arg-type]
        )

    def rounds_note(self, last: dict[str, Any]) -> str:
        if last["step"] != "dev-batches":
            return ""

        stopped = failed_batch(self.sr.run_dir / STEPS_DIR / "dev-batches", self.sr.environ)
        rounds = self.state["rounds"].get(stopped["batch"], 0) if stopped else 0
        if not rounds:
            return ""
        word = "round" if rounds == 1 else "rounds"
        return f" (after {rounds} {word} of repairs of batch {stopped['batch']})"  # type: ignore[index]


async def run(sr: StepRun) -> StepOutcome:
    pipeline = Pipeline(sr)
    sr.partial = lambda status, error: pipeline.outcome(status, error)
    try:
        return await pipeline.run()
    except StageError as exc:
        return pipeline.outcome("error", str(exc), "input")
