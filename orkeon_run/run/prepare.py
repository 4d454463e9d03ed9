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
from typing import TYPE_CHECKING, Any

from ..config.inputs import Inputs, MatcherGroup, Plan, load_document, parse_inputs, parse_plan
from ..errors import InputError
from ..ledger import BudgetLimits

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


def prepare(
    doc: Any,
    *,
    step: str | None,
    workspace: str | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    pinned: tuple[Plan, str] | None = None,
) -> RunConfig:
    """`pinned` is the plan a resumed run pinned in its state (and its path): the step
    runs it, whatever the plan file now holds."""
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
        if repair is not None:
            failed = repair
            if "plan" not in doc:  # the failed run's own plan, as it pinned it
                from .records import pinned_plan

                pinned = collect(lambda: pinned_plan(failed.state, failed.run_dir))
            doc = inherit(doc, failed.inputs)
    warnings: list[str] = []
    inputs = parse_inputs(doc)
    ws = resolve_workspace(inputs, workspace)

    gate = collect(lambda: _gate(inputs))
    collect(lambda: _check_model(inputs, env))
    servers = collect(lambda: _mcp_servers(inputs, ws, env, stdin_is_tty, warnings.append))
    settings = collect(
        lambda: _settings_hooks(inputs, ws, env, stdin_is_tty, warnings.append, servers or {})
    )
    shell_rules = collect(lambda: _shell_rules(inputs, ws, env, stdin_is_tty))
    crew = plan = None
    plan_rel = ""
    if step is not None:
        from .steps import step_module

        module = step_module(step)
        crew = collect(lambda: _crew(step, ws, module.ROLES))
        if crew is not None and servers is not None:
            collect(lambda: _check_mcp_entries(crew, servers))
        checked = collect(lambda: module.check(inputs, ws, pinned))
        if isinstance(checked, tuple):
            plan, plan_rel = checked
    # The crew's budget is the default; a budget in --inputs replaces it whole.
    budget = inputs.budget if "budget" in inputs.model_fields_set or crew is None else crew.budget
    if budget.usd is not None:  # a cost budget needs the model's price
        collect(lambda: _check_price(inputs))
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
        warnings=tuple(warnings + _rule_warnings(inputs, crew, servers or {})),
    )


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


def _check_model(inputs: Inputs, env: Mapping[str, str]) -> None:
    from ..models import check_model

    check_model(inputs.model, env)


def _check_price(inputs: Inputs) -> None:
    from ..models import check_price  # loads the price database, so only for a usd budget

    check_price(inputs.model)


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


def _mcp_servers(
    inputs: Inputs,
    ws: Path,
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    warn: Callable[[str], None],
) -> dict[str, McpServer]:
    from ..config.mcp import redacted_problems
    from ..config.mcp_sources import load_servers

    redacted = redacted_problems(inputs.mcp_servers)
    if redacted:
        raise InputError(redacted)
    return load_servers(inputs, workspace=ws, environ=env, stdin_is_tty=stdin_is_tty, warn=warn)


def _check_mcp_entries(crew: Crew, servers: Mapping[str, McpServer]) -> None:
    """Each MCP entry of a role's tools names a configured server."""
    from ..policy.mcpnames import is_mcp_name
    from ..tools.mcp.select import pattern_problem

    problems = []
    for i, role in enumerate(crew.roles):
        for j, entry in enumerate(role.tools):
            problem = pattern_problem(entry, servers) if is_mcp_name(entry) else None
            if problem:
                problems.append(f"{crew.source}: roles[{i}].tools[{j}]: {problem}")
    if problems:
        raise InputError(problems)


def _rule_warnings(
    inputs: Inputs, crew: Crew | None, servers: Mapping[str, McpServer]
) -> list[str]:
    """An MCP rule naming a server the run does not have: most likely a typo, which in a
    deny rule would let the calls it meant to stop through."""
    from ..policy.mcpnames import normalize, split_pattern

    known = {normalize(n) for n in servers}
    listed = ", ".join(sorted(known)) or "none is configured"
    found = [
        (f"gate.{k}[{i}]", r)
        for k in ("allow", "deny")
        for i, r in enumerate(getattr(inputs.gate, k))
    ]
    if crew is not None:
        for rs in crew.rule_sets:
            for kind in ("allow", "deny"):
                found += [
                    (f"{crew.source}: rule set {rs.name} {kind}[{i}]", r)
                    for i, r in enumerate(getattr(rs, kind))
                ]
    out = []
    for where, rule in found:
        parts = split_pattern(rule.strip())
        if parts is not None and parts[0] not in known:
            out.append(f"{where}: {rule!r} names no MCP server of this run ({listed})")
    return out


def _shell_rules(
    inputs: Inputs, ws: Path, env: Mapping[str, str], stdin_is_tty: bool | None
) -> ShellRules:
    from ..config.shell_settings import resolve_shell_rules
    from ..config.trust import is_trusted

    trusted = is_trusted(ws, environ=env, stdin_is_tty=stdin_is_tty)
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


def stdin_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
