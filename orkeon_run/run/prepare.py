"""Everything `--inputs` names, resolved, loaded and checked once, into one frozen
`RunConfig` the run then uses: the workspace, the model check, the gate, the shell's
program rules, the MCP servers, the settings-shape hooks, the step's crew and budget (its
MCP entries checked against the servers), the plan a batch step runs, the failed run a
repair starts from. `orkeon validate` runs exactly this, and `orkeon run` runs it before
anything is written. Problems are collected, not stopped at the first, and reported
together as one line each (exit 2).

A tasks-repair run takes what it does not give again from the failed run's saved inputs,
merged into the document here, once (the failed run is loaded by failed.py). A resumed
run's plan is the one it pinned in its state (`pinned`), never the file in the workspace a
role could have rewritten; so is a repair's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..config.inputs import Inputs, MatcherGroup, Plan, load_document, parse_inputs, parse_plan
from ..config.instructions import NO_INSTRUCTIONS, Instructions, load_instructions
from ..config.mcp import McpServer
from ..config.mcp_sources import untrusted_servers
from ..config.pins import NO_PINS, Pins, run_pins
from ..config.run_settings import resolve, settings_files
from ..config.shell_settings import resolve_shell_rules
from ..config.sources import Sources, bare_requested, run_sources
from ..errors import InputError
from ..hooks.claude.sources import load_settings_hooks
from ..hooks.native_files import missing_files
from ..limits import BudgetLimits
from ..models import check_model
from ..policy.gate import Gate
from ..policy.mcpnames import normalize, split_pattern
from ..policy.programs import ShellRules
from ..policy.rules import parse_rule
from . import mcp_checks
from .confine import Confinement, decide, operator_commands, while_probing
from .steps import StepModule, step_module

if TYPE_CHECKING:
    from ..config.crews import Crew
    from .failed import FailedRun
    from .patch_out import PatchTarget

T = TypeVar("T")

DEFAULT_PLAN = ".orkeon/plan.json"
# A run needs a model named: the inputs' `model`, `--model`, ORKEON_MODEL or a settings file.
MODEL_REQUIRED = 'model: required; "provider": "scripted" runs a script with no network'


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
    # The files pinned by content at run start (config/pins.py): none without a step.
    pins: Pins = NO_PINS
    # The project's instruction files, read once here (config/instructions.py).
    instructions: Instructions = NO_INSTRUCTIONS
    # `--patch FILE`: where the run's change goes, and the commit it is made against.
    patch: PatchTarget | None = None
    # Where configuration beyond the inputs was looked for (config/sources.py): a bare
    # run's holds none of those places. Set by `prepare`, from its workspace.
    sources: Sources | None = None

    @property
    def mcp_needed(self) -> dict[str, McpServer]:
        """The servers a role of the step's crew names (`mcp__SERVER…` in its tools), in
        configuration order: the ones a run starts. A server no role names is not started."""
        if self.crew is None or not self.mcp_servers:
            return {}
        named = {p[0] for r in self.crew.roles for t in r.tools if (p := split_pattern(t))}
        return {n: s for n, s in self.mcp_servers.items() if normalize(n) in named}

    @property
    def bare(self) -> bool:
        """A hermetic run (`--bare`, ORKEON_BARE=1): only the inputs' configuration."""
        return self.sources is not None and self.sources.bare

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
    bare: bool = False,
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
    error (MODEL_REQUIRED). `bare` (or ORKEON_BARE in `environ`): read no configuration the
    inputs do not name (config/sources.py): the one place that is decided."""
    env = os.environ if environ is None else environ
    found = Problems()
    warnings: list[str] = []
    repair: FailedRun | None = None
    if step == "tasks-repair":
        doc, repair, pinned = _from_failed_run(doc, env, found, pinned)
    inputs = parse_inputs(doc)
    ws = resolve_workspace(inputs, workspace)
    sources = run_sources(ws, env, bare=bare_requested(bare, env))
    trusted = sources.workspace_trusted(env, stdin_is_tty)
    if knobs:
        files = settings_files(sources, trusted=trusted)
        folded = found.collect(lambda: resolve(doc, flags=flags, environ=env, files=files))
        if folded is not None and folded is not doc:
            doc = folded
            inputs = parse_inputs(doc)
    needed = step is not None if need_model is None else need_model
    if needed and "model" not in doc and not found.lines:  # a bad knob may have named it
        found.lines.append(MODEL_REQUIRED)
    module, crew, default_budget = _step_parts(step, sources.crews, found)
    gate = found.collect(lambda: _gate(inputs))
    found.collect(lambda: check_model(inputs.model, env))
    servers = found.collect(
        lambda: mcp_checks.servers_of(inputs, ws, env, stdin_is_tty, warnings.append, sources)
    )
    settings = found.collect(
        lambda: load_settings_hooks(
            inputs,
            workspace=ws,
            environ=env,
            stdin_is_tty=stdin_is_tty,
            warn=warnings.append,
            mcp_servers=list(servers or {}),
            sources=sources,
        )
    )
    shell_rules = found.collect(
        lambda: resolve_shell_rules(
            inputs.shell, workspace=ws, workspace_trusted=trusted, environ=env, sources=sources
        )
    )
    if hook_files != "skip":
        missing = missing_files(inputs.native_hooks, ws, env.get("PATH", os.defpath))
        (found.lines if hook_files == "error" else warnings).extend(missing)
    if crew is not None and servers is not None:
        untrusted = untrusted_servers(ws, environ=env, stdin_is_tty=stdin_is_tty, sources=sources)
        found.collect(lambda: mcp_checks.check_entries(crew, servers, untrusted))
    plan = None
    plan_rel = ""
    if module is not None:
        checked = found.collect(lambda: module.check(inputs, ws, pinned, sources))
        if isinstance(checked, tuple):
            plan, plan_rel = checked
    patch = found.collect(lambda: patch_target(inputs, step, ws))
    budget = stop_block_cap(budget_limits(inputs, default_budget), env)
    warnings.extend(budget.per_role_warnings())
    if budget.usd is not None:  # a cost budget needs the model's price
        from ..models.pricing import check_price

        found.collect(lambda: check_price(inputs.model))  # loads the price database
    pins = NO_PINS  # the files a trusted command names, pinned once the rest is checked
    if step is not None and not found.lines:
        argvs = [s.argv for s in (servers or {}).values()]
        pins = (
            found.collect(
                lambda: run_pins(
                    ws, inputs.native_hooks, settings or {}, argvs, env, sources.pin_guards
                )
            )
            or NO_PINS
        )
    if found.lines:
        raise InputError(sorted(set(found.lines)))
    planned = plan or (inputs.plan if isinstance(inputs.plan, Plan) else None)  # validate's
    roots = [root for b in planned.batches for r in b.roles for root in r.roots] if planned else []
    instructions = load_instructions(
        ws,
        inputs.instructions.files,
        roots,
        everywhere=hasattr(module, "default_budget"),  # a pipeline: its plan comes later
        bare=not sources.instructions,  # --bare reads none (config/sources.py)
        config_dir=sources.config_dir,
        environ=env,
        stdin_is_tty=stdin_is_tty,
    )
    assert gate is not None and shell_rules is not None  # no problem: every check returned
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
        warnings=tuple(
            warnings
            + mcp_checks.rule_warnings(inputs, crew, servers or {})
            + mcp_checks.network_warnings(servers or {})
        ),
        confinement=replace(
            decide(inputs, ws, env, operator_commands(settings or {}, servers or {})),
            pinned=pins.paths,
        ),
        pins=pins,
        instructions=instructions,
        patch=patch,
        sources=sources,
    )


class Problems:
    """The problems found so far: `collect(fn)` runs a check, keeping its InputError's
    lines rather than stopping at the first (None then)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def collect(self, fn: Callable[[], T]) -> T | None:
        try:
            return fn()
        except InputError as exc:
            self.lines.extend(exc.problems)
            return None


def _from_failed_run(
    doc: Any, env: Mapping[str, str], found: Problems, pinned: tuple[Plan, str] | None
) -> tuple[Any, FailedRun | None, tuple[Plan, str] | None]:
    """A tasks-repair's document with what it takes from the failed run its `repair.run`
    names, that run, and the plan it runs (failed.py). The run that cannot be read is
    reported at once: what else the document lacks would come from it."""
    from .failed import failed_plan, failed_run, inherit  # only a tasks-repair reads one

    if not isinstance(doc, dict) or not isinstance(doc.get("repair"), dict):
        return doc, None, pinned
    raw = doc["repair"].get("run")
    if not isinstance(raw, str):
        return doc, None, pinned
    repair = found.collect(lambda: failed_run(raw, env))
    if repair is None:
        raise InputError(found.lines)
    pinned = found.collect(lambda: failed_plan(doc, repair))
    return inherit(doc, repair.inputs), repair, pinned


def _step_parts(
    step: str | None, crews: Path | None, found: Problems
) -> tuple[StepModule | None, Crew | None, BudgetLimits]:
    """The step's module, its crew (None for a step that runs other steps' crews, and for
    no step) and the budget it has when the inputs give none. `crews`: the workspace whose
    `.orkeon/crews/` may replace the built-in crews (`Sources.crews`; None: none)."""
    default_budget = BudgetLimits()
    if step is None:
        return None, None, default_budget
    module = step_module(step)
    if hasattr(module, "default_budget"):  # a step that runs other steps' crews
        budget = found.collect(lambda: module.default_budget(crews))
        return module, None, budget or default_budget
    crew = found.collect(lambda: _crew(step, crews, module.ROLES))
    return module, crew, crew.budget if crew is not None else default_budget


def budget_limits(inputs: Inputs, default: BudgetLimits) -> BudgetLimits:
    """The step's budget: each limit the inputs' `budget` gives (a knob's value was folded
    into it), else the crew's (docs/inputs.md, "budget")."""
    if "budget" not in inputs.model_fields_set:
        return default
    given = inputs.budget.model_fields_set
    return default.model_copy(update={k: getattr(inputs.budget, k) for k in given})


STOP_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"


def stop_block_cap(budget: BudgetLimits, env: Mapping[str, str]) -> BudgetLimits:
    """`budget.stop_blocks`, unless Claude Code's `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP` is set
    (the environment wins over the inputs, as orkeon's own knobs do). A value that is not
    a whole number of at least 1 is an InputError naming the variable."""
    raw = env.get(STOP_CAP_ENV, "")
    if not raw:
        return budget
    if not raw.strip().isdigit() or int(raw) < 1:
        raise InputError(f"{STOP_CAP_ENV}: must be a whole number of at least 1, not {raw!r}")
    return budget.model_copy(update={"stop_blocks": int(raw)})


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


def patch_target(inputs: Inputs, step: str | None, ws: Path) -> PatchTarget | None:
    """`patch`, checked (run/patch_out.py); None when the inputs give none."""
    if inputs.patch is None:
        return None
    # Loaded only when the inputs ask for a patch: the patch's git and scanner modules.
    from .patch_out import target

    return target(inputs, step, ws)


def _crew(step: str, ws: Path | None, roles: tuple[str, ...]) -> Crew:
    # Loaded for a step only (TOML, the crews' rules): `orkeon validate` without a step
    # starts without them (bench_startup.py).
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


def stdin_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
