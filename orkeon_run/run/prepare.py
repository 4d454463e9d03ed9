"""Everything `--inputs` names, resolved, loaded and checked once, into one frozen
`RunConfig` the run then uses: the workspace, the model check, the gate, the shell's
program rules, the MCP servers, the settings-shape hooks, the step's crew and budget (its
MCP entries checked against the servers), the plan a batch step runs, the failed run a
repair starts from. `orkeon validate` runs exactly this, and `orkeon run` runs it before
anything is written. Problems are collected, not stopped at the first, and reported
together as one line each (exit 2).

A tasks-repair run takes what it does not give again from the failed run's saved inputs
(`INHERITED`), merged into the document here, once, so the run directory records the
inputs the repair really ran with. The failed run's records are read only once checked
against its seal (records.py), and its plan is the one it pinned in its state, never the
file in the workspace a role could have rewritten; so is a resumed run's (`pinned`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config.inputs import Inputs, MatcherGroup, Plan, load_document, parse_inputs, parse_plan
from ..errors import InputError
from ..ledger import BudgetLimits
from ..models import check_model, check_price
from .confine import Confinement, decide, operator_commands, while_probing

if TYPE_CHECKING:
    from ..config.crews import Crew
    from ..config.mcp import McpServer
    from ..policy.gate import Gate
    from ..policy.programs import ShellRules

# What a repair takes from the failed run unless given again: its workspace and model, what
# the role was asked to do and checked by, and the guards it ran under (the hooks registry
# is handed to the agent started again).
INHERITED = (
    "workspace",
    "model",
    "plan",
    "audit",
    "shell",
    "hooks",
    "settings",
    "gate",
    "mcp_servers",
)
DEFAULT_PLAN = ".orkeon/plan.json"
# A run needs a model named: the inputs' `model`, `--model`, ORKEON_MODEL or a settings file.
MODEL_REQUIRED = 'model: required; "provider": "scripted" runs a script with no network'


@dataclass(frozen=True)
class FailedRun:
    """The run a tasks-repair starts from: its directory and what it recorded (each
    record checked against the run's seal)."""

    run_dir: Path
    result: dict[str, Any]  # {} when it was killed before its result
    state: dict[str, Any]
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunConfig:
    """One run's configuration, checked. `step` is None for commands that run no step
    (`hooks list`, `hooks check`, `validate` without --step): then `crew` is None too."""

    step: str | None
    inputs: Inputs
    doc: dict[str, Any]  # the effective inputs document, the workspace filled in
    workspace: Path  # resolved
    shell_rules: ShellRules
    gate: Gate
    settings_hooks: dict[str, list[MatcherGroup]]
    crew: Crew | None = None
    # Every configured MCP server, by name (config/mcp_sources.py).
    mcp_servers: dict[str, McpServer] = field(default_factory=dict)
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    plan: Plan | None = None
    plan_rel: str = ""  # the plan's path in the workspace; "" for a plan given inline
    repair: FailedRun | None = None
    warnings: tuple[str, ...] = ()
    # The sandbox's state, the audit's git, the step's sandbox policy (run/confine.py).
    confinement: Confinement = field(default_factory=lambda: Confinement("off"))

    @property
    def mcp_needed(self) -> dict[str, McpServer]:
        """The servers a role of the step's crew names (`mcp__SERVER…` in its tools), in
        configuration order: the ones a run starts. A server no role names is not started."""
        if self.crew is None or not self.mcp_servers:
            return {}
        from ..policy.mcpnames import normalize, split_pattern

        named = {p[0] for r in self.crew.roles for t in r.tools if (p := split_pattern(t))}
        return {n: s for n, s in self.mcp_servers.items() if normalize(n) in named}

    @property
    def key_env(self) -> str | None:
        """The variable holding the model's key (never handed to a program the run starts)."""
        return getattr(self.inputs.model, "api_key_env", None)


@while_probing  # the shell sandbox is probed in a thread while the rest is checked
def prepare(
    doc: Any,
    *,
    step: str | None,
    workspace: str | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    flags: Mapping[str, str | None] | None = None,
    knobs: bool = True,
    hook_files: Literal["error", "warn", "skip"] = "skip",
    pinned: tuple[Plan, str] | None = None,
    need_model: bool | None = None,
) -> RunConfig:
    """The checked configuration of a run of `step` (None: no step) from the inputs `doc`.

    `flags` are the command line's knobs (config/run_settings.py: `{"usd": "2.5", ...}`);
    with `knobs`, they, the `ORKEON_*` variables and the settings files' `Orkeon:Run`
    section are folded into the document by their precedence. A pipeline's steps are
    prepared with `knobs=False`: the pipeline folded them once, and each step runs on what
    is left of its budget. `hook_files`: a native hook whose program or script is missing
    is a problem (`"error"`, `orkeon validate`), a warning (`"warn"`, `orkeon run`), or not
    looked for (`"skip"`). `pinned` is the plan a resumed run pinned in its state (and its
    path): the step runs it, whatever the plan file now holds. `need_model` (default: when
    a step is given): a document with no `model`, once the knobs are folded in, is an input
    error (MODEL_REQUIRED)."""
    env = os.environ if environ is None else environ
    problems: list[str] = []

    def collect(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except InputError as exc:
            problems.extend(exc.problems)
            return None

    repair: FailedRun | None = None
    if step == "tasks-repair" and isinstance(doc, dict) and isinstance(doc.get("repair"), dict):
        raw = doc["repair"].get("run")
        if isinstance(raw, str):
            repair = collect(lambda: failed_run(raw, env))
            if repair is None:  # what else the document lacks would come from that run
                raise InputError(problems)
            failed = repair
            pinned = collect(lambda: failed_plan(doc, failed))
            doc = inherit(doc, failed.inputs)
    warnings: list[str] = []
    inputs = parse_inputs(doc)
    ws = resolve_workspace(inputs, workspace)

    from ..config.trust import is_trusted

    trusted = is_trusted(ws, environ=env, stdin_is_tty=stdin_is_tty)
    if knobs:
        folded = collect(lambda: _knobs(doc, flags, env, ws, trusted))
        if folded is not None and folded is not doc:
            doc = folded
            inputs = parse_inputs(doc)
    needed = step is not None if need_model is None else need_model
    if needed and "model" not in doc and not problems:  # a bad knob may have named it
        problems.append(MODEL_REQUIRED)
    module = crew = None
    default_budget = BudgetLimits()
    if step is not None:
        from .steps import step_module

        module = step_module(step)
        if hasattr(module, "default_budget"):  # a step that runs other steps' crews
            default_budget = collect(lambda: module.default_budget(ws)) or default_budget
        else:
            crew = collect(lambda: _crew(step, ws, module.ROLES))
            default_budget = crew.budget if crew is not None else default_budget
    from . import mcp

    gate = collect(lambda: _gate(inputs))
    collect(lambda: check_model(inputs.model, env))
    servers = collect(lambda: mcp.servers_of(inputs, ws, env, stdin_is_tty, warnings.append))
    settings = collect(
        lambda: _settings_hooks(inputs, ws, env, stdin_is_tty, warnings.append, servers or {})
    )
    shell_rules = collect(lambda: _shell_rules(inputs, ws, env, trusted))
    if hook_files != "skip":
        from ..hooks.native_files import missing_files

        found = missing_files(inputs.native_hooks, ws, env.get("PATH", os.defpath))
        (problems if hook_files == "error" else warnings).extend(found)
    if crew is not None and servers is not None:
        collect(lambda: mcp.check_entries(crew, servers))
    plan = None
    plan_rel = ""
    if module is not None:
        checked = collect(lambda: module.check(inputs, ws, pinned))
        if isinstance(checked, tuple):
            plan, plan_rel = checked
    budget = budget_limits(inputs, default_budget)
    warnings.extend(budget.per_role_warnings())
    if budget.usd is not None:  # a cost budget needs the model's price
        collect(lambda: check_price(inputs.model))  # loads the price database
    if problems:
        raise InputError(sorted(set(problems)))
    return RunConfig(
        step=step,
        inputs=inputs,
        # The saved inputs name the workspace the run used, so --resume and tasks-repair
        # act on the same tree whatever folder they are started from.
        doc={**doc, "workspace": str(ws)},
        workspace=ws,
        shell_rules=shell_rules,
        gate=gate,
        settings_hooks=settings or {},
        crew=crew,
        budget=budget,
        plan=plan,
        plan_rel=plan_rel,
        repair=repair,
        mcp_servers=servers or {},
        warnings=tuple(warnings + mcp.rule_warnings(inputs, crew, servers or {})),
        confinement=decide(inputs, ws, env, operator_commands(settings or {}, servers or {})),
    )


def budget_limits(inputs: Inputs, default: BudgetLimits) -> BudgetLimits:
    """The step's budget: each limit the inputs' `budget` gives (a knob's value was folded
    into it), else the crew's (docs/inputs.md, "budget")."""
    if "budget" not in inputs.model_fields_set:
        return default
    given = inputs.budget.model_fields_set
    return default.model_copy(update={k: getattr(inputs.budget, k) for k in given})


def _knobs(
    doc: Any,
    flags: Mapping[str, str | None] | None,
    env: Mapping[str, str],
    ws: Path,
    trusted: bool,
) -> Any:
    from ..config import run_settings

    files = run_settings.settings_files(ws, trusted=trusted, environ=env)
    return run_settings.resolve(doc, flags=flags, environ=env, files=files)


def resolve_workspace(inputs: Inputs, override: str | None) -> Path:
    raw = override or inputs.workspace or "."
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    path = Path(os.path.expanduser(raw))
    if not path.is_dir():
        field_name = "--workspace" if override else "workspace"
        raise InputError(f"{field_name}: not a directory: {raw}")
    return path.resolve()


def _gate(inputs: Inputs) -> Gate:
    from ..policy.gate import Gate
    from ..policy.rules import parse_rule

    problems = []
    for kind in ("allow", "deny"):
        for i, rule in enumerate(getattr(inputs.gate, kind)):
            try:
                parse_rule(rule)
            except ValueError as exc:
                problems.append(f"gate.{kind}[{i}]: {exc}")
    if problems:
        raise InputError(problems)
    return Gate.from_inputs(inputs.gate)


def _settings_hooks(
    inputs: Inputs,
    ws: Path,
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    warn: Callable[[str], None],
    servers: Mapping[str, McpServer],
) -> dict[str, list[MatcherGroup]]:
    from ..hooks.claude.sources import load_settings_hooks

    return load_settings_hooks(
        inputs,
        workspace=ws,
        environ=env,
        stdin_is_tty=stdin_is_tty,
        warn=warn,
        mcp_servers=list(servers),
    )


def _shell_rules(inputs: Inputs, ws: Path, env: Mapping[str, str], trusted: bool) -> ShellRules:
    from ..config.shell_settings import resolve_shell_rules

    return resolve_shell_rules(inputs.shell, workspace=ws, workspace_trusted=trusted, environ=env)


def _crew(step: str, ws: Path, roles: tuple[str, ...]) -> Crew:
    from ..config.crews import load_crew

    return load_crew(step, ws, roles=roles)  # the built-in crew, or .orkeon/crews/STEP.toml


def load_plan(ws: Path, plan: str | Plan) -> tuple[Plan, str]:
    """The plan the inputs give (inline, or the path of a file in the workspace) and the
    path it came from ("" for an inline plan)."""
    if isinstance(plan, Plan):
        return plan, ""
    path = ws / plan
    if not path.is_file():
        raise InputError(f"plan: no such file in the workspace: {plan}")
    return parse_plan(load_document(f"@{path}", what="plan"), origin="plan"), plan


# --- tasks-repair: the failed run --------------------------------------------------------


def run_dir_path(raw: str) -> Path:
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user.
    return Path(os.path.expanduser(raw)).resolve()


def repair_document(doc: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`doc` with the INHERITED keys the failed run's saved inputs give (as `prepare`
    merges them for a tasks-repair), or `doc` as it is when the failed run cannot be read
    (its problems are reported when the repair runs)."""
    repair = doc.get("repair") if isinstance(doc, dict) else None
    if not isinstance(repair, dict) or not isinstance(repair.get("run"), str):
        return doc
    try:
        failed = failed_run(repair["run"], environ)
    except InputError:
        return doc
    return inherit(doc, failed.inputs)


def inherit(doc: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """The tasks-repair inputs document with the INHERITED keys taken from the failed
    run's saved inputs where `doc` does not give them."""
    merged = dict(doc)
    for key in INHERITED:
        if key not in merged and key in saved:
            merged[key] = saved[key]
    return merged


def failed_run(raw: str, environ: Mapping[str, str] | None = None) -> FailedRun:
    """The records of the run a repair starts from, each checked against the run's seal
    (records.open_sealed). Its result may be missing (a run killed before it): the repair
    then works from the task alone. A run still running is refused."""
    from .records import in_use, open_sealed

    rd = run_dir_path(raw)
    if not (rd / "inputs.json").is_file():
        raise InputError(f"repair.run: not a run directory (no inputs.json): {rd}")
    holder = in_use(rd)
    if holder is not None:
        raise InputError(f"repair.run: {rd} is still running{holder}: repair it once it ended")
    _, docs = open_sealed(rd, "repair.run", environ)
    inputs = docs["inputs.json"]
    if not isinstance(inputs, dict):
        raise InputError(f"repair.run: {rd / 'inputs.json'} is not an inputs document")
    return FailedRun(rd, _record(docs["result.json"]), _record(docs["state.json"]), inputs)


def _record(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def failed_plan(doc: dict[str, Any], failed: FailedRun) -> tuple[Plan, str] | None:
    """The plan a repair of `failed` runs: the one that run pinned when the repair's
    inputs give no plan, or give the one it was given (a pipeline's repairs do); None (the
    inputs' plan, read as given) for another."""
    from .records import pinned_plan
    from .rundir import redact

    if "plan" in doc and redact(doc["plan"]) != failed.inputs.get("plan"):
        return None
    return pinned_plan(failed.state, failed.run_dir)


def stdin_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
