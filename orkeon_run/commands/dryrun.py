"""`orkeon run STEP --dry-run` (docs/inputs.md, "A dry run"): what the run would do, from
the same checks a run makes, and nothing more: no model called, no MCP server started,
no run directory, nothing written. It prints the steps and their roles with their tools
(a batch role's roots from the plan), every hook with its command as it would run, the
MCP servers the crews name, the sandbox and its network, the model's price per million
tokens and what the budget given may cost. Exit 0, or 2 with what is wrong, as `orkeon
run` would say it."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from ..config.crews import load_crew
from ..config.inputs import load_document
from ..config.run_settings import flag_values
from ..errors import InputError
from ..models.pricing import context_for, price_for
from ..run.prepare import RunConfig, prepare, stdin_tty
from ..run.steps import step_module
from ..units import count, duration, money

MTOK = 1_000_000
# Rates are read off one answer of this many tokens (scaled to a million): an answer of a
# million would be priced at a long prompt's tier.
SAMPLE = 1_000
# The steps a pipeline runs, in order (a repair only when a batch's audit fails).
CHAIN = ("dev-spec", "dev-plan", "dev-batches", "tasks-repair")


def main(
    step: str,
    inputs: str | None,
    *,
    workspace: str | None = None,
    output: str | None = None,
    knobs: dict[str, str | None] | None = None,
    bare: bool = False,
) -> int:
    if inputs is None:
        raise InputError("--inputs: required for --dry-run")
    config = prepare(
        load_document(inputs),
        step=step,
        workspace=workspace,
        stdin_is_tty=stdin_tty(),
        flags=flag_values(**(knobs or {})),
        knobs=True,
        hook_files="warn",
        bare=bare,
    )
    if config.sources is not None:
        config.sources.release()  # a bare run's plugin data folder: no hook runs here
    plan = what_would_run(config)
    if output == "json":
        sys.stdout.write(json.dumps(plan, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(text(plan))
    return 0


def what_would_run(config: RunConfig) -> dict[str, Any]:
    assert config.step is not None
    steps = list(CHAIN) if config.step == "pipeline" else [config.step]
    return {
        "step": config.step,
        "workspace": str(config.workspace),
        "bare": config.bare,
        "steps": [_step(config, name) for name in steps],
        "hooks": _hooks(config),
        "mcp_servers": _servers(config),
        "sandbox": {
            "state": config.confinement.state,
            "reason": config.confinement.reason or None,
            "network": _network(config.inputs.shell),
        },
        "model": _model(config),
        "budget": {k: getattr(config.budget, k) for k in ("seconds", "turns", "tokens", "usd")},
        "estimate": _estimate(config),
        "warnings": list(config.warnings),
    }


def _step(config: RunConfig, name: str) -> dict[str, Any]:
    if name == config.step:
        crew = config.crew
    else:  # a pipeline's later step: its crew as the run would load it
        crews = config.sources.crews if config.sources else config.workspace
        crew = load_crew(name, crews) if step_module(name) else None
    roles = [{"role": r.name, "tools": list(r.tools)} for r in crew.roles] if crew else []
    out: dict[str, Any] = {"name": name, "roles": roles}
    if name == "dev-batches":
        if config.plan is not None and config.step != "pipeline":
            tools = roles[0]["tools"] if roles else []
            out["roles"] = [
                {"role": f"{b.name}/{r.name}", "roots": list(r.roots), "tools": tools}
                for b in config.plan.batches
                for r in b.roles
            ]
        else:
            out["note"] = "the roles are the plan's, written by dev-plan"
    if name == "tasks-repair" and config.step == "pipeline":
        out["note"] = "only when a batch's audit fails: its failed roles, again"
    return out


def _hooks(config: RunConfig) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"n": n, "contract": "native", "event": h.event, "command": h.command}
        for n, h in enumerate(config.inputs.native_hooks, 1)
    ]
    for event, groups in config.settings_hooks.items():
        for group in groups:
            for h in group.hooks:
                entry: dict[str, Any] = {
                    "contract": "settings",
                    "event": event,
                    "matcher": group.matcher or "*",
                    "command": h.label,  # an http or prompt hook: `POST URL`, `prompt: …`
                    "timeout": h.timeout,
                }
                if h.type != "command":
                    entry["type"] = h.type
                if h.plugin is not None:
                    entry["plugin"] = h.plugin.name
                out.append(entry)
    return out


def _servers(config: RunConfig) -> list[dict[str, Any]]:
    out = []
    for name, server in config.mcp_needed.items():
        where = server.url if server.url else " ".join(server.argv)
        out.append({"name": name, "transport": "http" if server.url else "stdio", "at": where})
    return out


def _network(shell: Any) -> Any:
    network = getattr(shell, "network", False)
    if isinstance(network, bool):
        return network
    return list(network) if isinstance(network, list | tuple) else str(network)


def _model(config: RunConfig) -> dict[str, Any]:
    model = config.inputs.model
    price = price_for(model)
    rates = None
    if price is not None:
        scale = MTOK / SAMPLE
        rates = {
            "input_per_mtok": round(price.usd(SAMPLE, 0, 0, 0) * scale, 6),
            "output_per_mtok": round(price.usd(0, SAMPLE, 0, 0) * scale, 6),
            "cache_read_per_mtok": round(price.usd(SAMPLE, 0, SAMPLE, 0) * scale, 6),
            "cache_write_per_mtok": round(price.usd(SAMPLE, 0, 0, SAMPLE) * scale, 6),
        }
    return {
        "provider": model.provider,
        "model": getattr(model, "model", None),
        "price": rates,
        "context_tokens": context_for(model) if model.provider != "scripted" else None,
    }


def _estimate(config: RunConfig) -> dict[str, Any]:
    """What the budget given may cost, as ranges that hold whatever the model does: a token
    budget costs between all-input and all-output at the model's rates; a usd budget buys
    between all-output and all-input tokens; a turn budget costs at most every turn's
    context read whole and its answer at the output cap."""
    model = config.inputs.model
    price = price_for(model)
    budget = config.budget
    out: dict[str, Any] = {}
    if price is None:
        return {"note": "no price is known for the model: its cost cannot be estimated"}
    scale = MTOK / SAMPLE
    per_in, per_out = price.usd(SAMPLE, 0, 0, 0) * scale, price.usd(0, SAMPLE, 0, 0) * scale
    if budget.tokens is not None:
        out["usd_for_tokens"] = [
            round(budget.tokens * min(per_in, per_out) / MTOK, 6),
            round(budget.tokens * max(per_in, per_out) / MTOK, 6),
        ]
    if budget.usd is not None and max(per_in, per_out) > 0:
        out["tokens_for_usd"] = [
            int(budget.usd / max(per_in, per_out) * MTOK),
            int(budget.usd / min(per_in, per_out) * MTOK) if min(per_in, per_out) > 0 else None,
        ]
    if budget.turns is not None and model.provider != "scripted":
        window = context_for(model)
        answer = getattr(model, "max_output_tokens", None) or min(16_384, window // 2)
        out["usd_at_most_for_turns"] = round(budget.turns * price.usd(window, answer, 0, 0), 6)
    return out


def text(plan: Mapping[str, Any]) -> str:
    lines = [f"dry run of {plan['step']} in {plan['workspace']}: nothing runs, nothing is written"]
    if plan.get("bare"):
        lines.append("bare: only the configuration the inputs name")
    for step in plan["steps"]:
        lines.append(f"step {step['name']}" + (f" ({step['note']})" if step.get("note") else ""))
        for r in step["roles"]:
            roots = f", roots {', '.join(r['roots'])}" if r.get("roots") else ""
            lines.append(f"  role {r['role']}{roots}: {', '.join(r['tools'])}")
    for h in plan["hooks"]:
        if h["contract"] == "native":
            lines.append(f"hook #{h['n']} {h['event']}: {h['command']}")
        else:
            lines.append(f"hook {h['event']} [{h['matcher']}]: {h['command']}")
    for s in plan["mcp_servers"]:
        lines.append(f"mcp server {s['name']} ({s['transport']}): {s['at']}")
    sandbox = plan["sandbox"]
    why = f": {sandbox['reason']}" if sandbox["reason"] else ""
    net = sandbox["network"]
    net = {True: "open", False: "off"}.get(net, net) if isinstance(net, bool) else ", ".join(net)
    lines.append(f"shell sandbox: {sandbox['state']}{why}; network: {net}")
    m = plan["model"]
    name = f"{m['provider']} {m['model']}" if m["model"] else m["provider"]
    if m["price"] is None:
        lines.append(f"model: {name}, no price known")
    else:
        p = m["price"]
        lines.append(
            f"model: {name}, {money(p['input_per_mtok'])} in / {money(p['output_per_mtok'])} "
            f"out per million tokens (cache read {money(p['cache_read_per_mtok'])}, "
            f"write {money(p['cache_write_per_mtok'])})"
        )
    b = plan["budget"]
    lines.append(
        "budget: "
        + ", ".join(
            [
                "no time limit" if b["seconds"] is None else duration(b["seconds"]),
                "no turn limit" if b["turns"] is None else count(b["turns"], "turn"),
                "no token limit" if b["tokens"] is None else count(b["tokens"], "token"),
                "no cost limit" if b["usd"] is None else money(b["usd"]),
            ]
        )
    )
    e = plan["estimate"]
    if "note" in e:
        lines.append(f"estimate: {e['note']}")
    if "usd_for_tokens" in e:
        lo, hi = e["usd_for_tokens"]
        lines.append(f"estimate: the token budget costs {money(lo)} to {money(hi)}")
    if "tokens_for_usd" in e:
        lo, hi = e["tokens_for_usd"]
        top = "any number of" if hi is None else f"{hi:,}"
        lines.append(
            f"estimate: the cost budget buys {lo:,} (all output) to {top} (all input) tokens"
        )
    if "usd_at_most_for_turns" in e:
        lines.append(f"estimate: the turn budget costs at most {money(e['usd_at_most_for_turns'])}")
    lines += [f"warning: {w}" for w in plan["warnings"]]
    return "\n".join(lines) + "\n"
