"""Every check on the inputs, in one place: `orkeon validate` runs exactly this, and
`orkeon run` runs it before anything else. Problems are collected, not stopped at the
first, and reported together as one line each (exit 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .inputs import Inputs, MatcherGroup, Plan, parse_inputs, parse_plan


@dataclass
class Prepared:
    inputs: Inputs
    doc: dict[str, Any]
    workspace: Path
    shell_rules: Any  # shellrules.ShellRules
    settings_config: dict[str, list[MatcherGroup]]
    plan: Plan | None = None
    warnings: list[str] = field(default_factory=list)


def resolve_workspace(inputs: Inputs, override: str | None) -> Path:
    raw = override or inputs.workspace or "."
    # os.path.expanduser: Path.expanduser raises RuntimeError for an unknown ~user (an
    # internal error, exit 1); the shell's way is to keep the text as it is.
    path = Path(os.path.expanduser(raw))
    if not path.is_dir():
        field_name = "--workspace" if override else "workspace"
        raise InputError(f"{field_name}: not a directory: {raw}")
    return path.resolve()


def prepare(
    doc: Any,
    *,
    step: str | None,
    workspace: str | None = None,
    environ: Mapping[str, str] | None = None,
    stdin_is_tty: bool | None = None,
    warn: Callable[[str], None] | None = None,
) -> Prepared:
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    warn_fn = warn or warnings.append
    inputs = parse_inputs(doc)
    ws = resolve_workspace(inputs, workspace)
    problems: list[str] = []

    def collect(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except InputError as exc:
            problems.extend(exc.problems)
            return None

    collect(lambda: _check_gate(inputs))
    collect(lambda: _check_model(inputs, env))
    collect(lambda: _check_price(inputs))
    settings_config = collect(lambda: _load_settings_hooks(inputs, ws, env, stdin_is_tty, warn_fn))
    shell_rules = collect(lambda: _shell_rules(inputs, ws, env, stdin_is_tty))
    plan = collect(lambda: _check_step(inputs, step, ws))
    if problems:
        raise InputError(sorted(set(problems)))
    return Prepared(
        inputs=inputs,
        doc=doc,
        workspace=ws,
        shell_rules=shell_rules,
        settings_config=settings_config or {},
        plan=plan,
        warnings=warnings,
    )


def _check_gate(inputs: Inputs) -> None:
    from .rules import parse_rule

    problems = []
    for kind in ("allow", "deny"):
        for i, rule in enumerate(getattr(inputs.gate, kind)):
            try:
                parse_rule(rule)
            except ValueError as exc:
                problems.append(f"gate.{kind}[{i}]: {exc}")
    if problems:
        raise InputError(problems)


def _check_model(inputs: Inputs, env: Mapping[str, str]) -> None:
    from .models import check_model

    check_model(inputs.model, env)


def _check_price(inputs: Inputs) -> None:
    """A `usd` budget needs the model's price (the price database is loaded only then)."""
    if inputs.budget.usd is not None:
        from .models import check_price

        check_price(inputs.model)


def _load_settings_hooks(
    inputs: Inputs,
    ws: Path,
    env: Mapping[str, str],
    stdin_is_tty: bool | None,
    warn: Callable[[str], None],
) -> dict[str, list[MatcherGroup]]:
    from .hooks.sources import load_settings_hooks

    return load_settings_hooks(
        inputs, workspace=ws, environ=env, stdin_is_tty=stdin_is_tty, warn=warn
    )


def _shell_rules(
    inputs: Inputs, ws: Path, env: Mapping[str, str], stdin_is_tty: bool | None
) -> Any:
    from .shellrules import resolve_shell_rules
    from .trust import is_trusted

    trusted = is_trusted(ws, environ=env, stdin_is_tty=stdin_is_tty)
    return resolve_shell_rules(inputs.shell, workspace=ws, workspace_trusted=trusted, environ=env)


def _check_step(inputs: Inputs, step: str | None, ws: Path) -> Plan | None:
    if step is not None:
        from .crew import load_crew

        load_crew(step, ws)  # the built-in crew, or the workspace's .orkeon/crews/STEP.toml
    if step == "dev-plan" and not (ws / inputs.spec).is_file():
        raise InputError(f"spec: no such file in the workspace: {inputs.spec} (run dev-spec first)")
    if step == "dev-spec" and not (inputs.request or "").strip():
        raise InputError("request: dev-spec needs a request (what to build, as text)")
    if step == "tasks-repair" and inputs.repair is None:
        raise InputError('repair: tasks-repair needs {"run": RUN_DIR, "role": "BATCH/ROLE"}')
    if step == "tasks-repair" and inputs.repair is not None:
        run = Path(os.path.expanduser(inputs.repair.run))
        if not (run / "inputs.json").is_file():
            raise InputError(f"repair.run: not a run directory (no inputs.json): {run}")
        plan = inputs.plan if isinstance(inputs.plan, Plan) else load_plan_file(ws, inputs.plan)
        names = [f"{b.name}/{r.name}" for b in plan.batches for r in b.roles]
        if inputs.repair.role not in names:
            raise InputError(
                f"repair.role: the plan has no role {inputs.repair.role} ({', '.join(names)})"
            )
        return plan
    if isinstance(inputs.plan, Plan):
        return inputs.plan
    if step == "dev-batches":
        return load_plan_file(ws, inputs.plan)
    return None


def load_plan_file(ws: Path, rel: str) -> Plan:
    from .inputs import load_document

    path = ws / rel
    if not path.is_file():
        raise InputError(f"plan: no such file in the workspace: {rel}")
    return parse_plan(load_document(f"@{path}", what="plan"), origin="plan")


def stdin_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
