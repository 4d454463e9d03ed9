"""`orkeon report --format md`: the run as a person reads it in a job summary or a
pull-request comment (GitHub Flavored Markdown).

Short on top (status, why, one table of roles, the audits), the long texts inside
`<details>` blocks, and the whole under `LIMIT` characters (a GitHub comment holds 65,536).
Every text from the run is inside a code span or a fenced block, never Markdown or HTML
of its own: a model's `@someone`, `#123`, link, image or `</details>` stays inert text.
"""

from __future__ import annotations

from .. import units
from .checks import markdown_checks
from .fmt import count, mark, money, seconds, stages
from .markdown_changes import changes
from .markdown_text import code, fence
from .model import CallView, HookView, RunView

LIMIT = 60_000
MAX_ROLES = 60
MAX_REFUSED = 20
MAX_HOOKS = 20
TAIL_CAP = 3000


def markdown(v: RunView) -> str:
    parts = [
        _headline(v),
        markdown_checks(v.checks),
        _steps(v),
        _roles(v),
        _audits(v),
        changes(v),
        _refused(v),
        _hooks(v),
        _plan(v),
        _network(v),
        _notes(v),
    ]
    out = "\n\n".join(p for p in parts if p) + "\n"
    if len(out) > LIMIT:
        out = out[:LIMIT] + "\n\n… (cut: the full report is `orkeon report --format html`)\n"
    return out


def _headline(v: RunView) -> str:
    code_part = f" (exit {v.exit_code})" if v.exit_code is not None else ""
    word = (
        "unfinished: no result, the run was killed or is still running"
        if not v.finished
        else v.status
    )
    lines = [f"### {mark(v.status)} orkeon {code(v.step or 'run')}: {word}{code_part}"]
    if v.error:
        lines.append(f"**Why:** {code(v.error, limit=400)}")
    b = v.budget
    calls, refused = len(v.calls), len(v.refused_calls)
    facts = [f"run {code(v.run_id)}"]
    if v.attempts > 1:
        facts.append(f"{v.attempts} attempts")
    facts.append(f"{units.count(calls, 'call')}, {count(refused)} refused")
    facts.append(units.spent_of("turns", int(b.get("turns") or 0), v.limits["turns"])
                 if v.limits.get("turns") else units.count(int(b.get("turns") or 0), "turn"))  # fmt: skip
    tokens = int(b.get("tokens_in") or 0) + int(b.get("tokens_out") or 0) or int(
        b.get("tokens") or 0
    )
    facts.append(units.count(tokens, "token"))
    facts.append(money(b.get("usd") if "usd" in b else 0.0))
    used = seconds(float(b.get("used_seconds") or 0.0))
    limit = v.limits.get("seconds")
    facts.append(f"{used} charged" + (f" of {seconds(limit)}" if limit else ""))
    if b.get("exhausted"):
        facts.append(f"**{code(str(b['exhausted']))} budget spent**")
    if v.network_refused:
        hosts = units.count(len(v.network_refused), "host")
        facts.append(f"{hosts} refused by the network allow-list")
    lines.append(" · ".join(facts))
    for name, path in v.artifacts.items():
        lines.append(f"{code(name)}: {code(path)}")
    return "\n\n".join(lines)


def _steps(v: RunView) -> str:
    """A pipeline's steps, in the order it ran them (a repair is a step of its own)."""
    if not v.steps:
        return ""
    rows = [
        "| step | status | exit | roles | calls | refused | time | records |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in v.steps:
        status = f"{mark(s.status)} {s.status}"
        if s.error:
            status += f": {code(s.error, table=True, limit=120)}"
        exit_code = "—" if s.exit_code is None else str(s.exit_code)
        rows.append(
            f"| {code(s.name, table=True)} | {status} | {exit_code} | {s.roles} | {s.calls} "
            f"| {s.refused} | {seconds(s.seconds)} | {code(s.run_dir, table=True)} |"
        )
    return "\n".join(rows)


def _roles(v: RunView) -> str:
    if not v.roles:
        return ""
    rows = [
        "| role | status | turns | calls | refused (by stage) | tokens in / out | cost | time |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in v.roles[:MAX_ROLES]:
        by = f" ({code(stages(r.refused_by), table=True)})" if r.refused_by else ""
        status = f"{mark(r.status)} {r.status}"
        if r.error:
            status += f": {code(r.error, table=True, limit=120)}"
        rows.append(
            f"| {code(r.name, table=True)} | {status} | {r.turns} | {r.calls} | {r.refused}{by} "
            f"| {count(r.tokens_in)} / {count(r.tokens_out)} | {money(r.usd)} | {seconds(r.seconds)} |"
        )
    if len(v.roles) > MAX_ROLES:
        rows.append(
            f"\n… and {len(v.roles) - MAX_ROLES} more roles (`orkeon report --format html`)."
        )
    if v.attempts > 1:
        rows.append(f"\nCounts cover all {v.attempts} attempts of this run directory.")
    return "\n".join(rows)


def _audits(v: RunView) -> str:
    if not v.audits:
        return ""
    rows = ["| audit of batch | result | what failed |", "| --- | --- | --- |"]
    for a in v.audits:
        word = "passed" if a.passed else "failed"
        rows.append(
            f"| {code(a.batch, table=True)} | {mark(word)} {word} | {code(a.what_failed, table=True)} |"
        )
    out = ["\n".join(rows)]
    for a in v.failed_audits[:5]:
        what = f", {code(' '.join(a.failed_command))}" if a.failed_command else ""
        out.append(
            "<details><summary>What the failed audit printed</summary>\n\n"
            f"Batch {code(a.batch)}{what}:\n\n{fence(a.output_tail, TAIL_CAP)}\n\n</details>"
        )
    return "\n\n".join(out)


def _refused(v: RunView) -> str:
    refused = v.refused_calls
    if not refused:
        return ""
    body = [_call_block(c) for c in refused[:MAX_REFUSED]]
    if len(refused) > MAX_REFUSED:
        body.append(f"… and {len(refused) - MAX_REFUSED} more (`orkeon report --format html`).")
    title = f"{len(refused)} refused call{'s' if len(refused) != 1 else ''}, with the text the model read"
    return f"<details><summary>{title}</summary>\n\n" + "\n\n".join(body) + "\n\n</details>"


def _call_block(c: CallView) -> str:
    head = f"{code(c.role)} call {c.seq} {code(c.tool)}"
    if c.target:
        head += f" {code(c.target, limit=120)}"
    what = "**invalid** (refused)" if c.stage == "invalid" else f"refused by **{c.stage}**"
    return f"{head}: {what}\n\n{fence(c.result)}"


def _hooks(v: RunView) -> str:
    failed = v.failed_hooks
    if not failed:
        return ""
    calls = {c.index: c for c in v.calls}
    rows = ["| role | call | hook | exit | first line |", "| --- | --- | --- | --- | --- |"]
    for h in failed[:MAX_HOOKS]:
        call = calls.get(h.call) if h.call is not None else None
        where = f"{call.seq} {code(call.tool, table=True)}" if call else "—"
        rows.append(
            f"| {code(h.role, table=True)} | {where} | {_hook_name(h)} {code(h.command, table=True, limit=80)} "
            f"| {_exit(h)} | {code(h.first_line, table=True, limit=160)} |"
        )
    if len(failed) > MAX_HOOKS:
        rows.append(f"\n… and {len(failed) - MAX_HOOKS} more.")
    title = f"{len(failed)} hook failure{'s' if len(failed) != 1 else ''} (the run went on)"
    return f"<details><summary>{title}</summary>\n\n" + "\n".join(rows) + "\n\n</details>"


def _hook_name(h: HookView) -> str:
    return f"{h.event} #{h.n}" if h.n is not None else h.event


def _exit(h: HookView) -> str:
    if h.timed_out:
        return "timed out"
    return "could not run" if h.exit_code is None else str(h.exit_code)


def _plan(v: RunView) -> str:
    if not v.plan_checks:
        return ""
    blocks = [
        f"Check {c['attempt']}:\n\n{fence(chr(10).join(c['problems']))}" for c in v.plan_checks[:3]
    ]
    n = len(v.plan_checks)
    title = f"The plan failed its check {n} time{'s' if n != 1 else ''}"
    return f"<details><summary>{title}</summary>\n\n" + "\n\n".join(blocks) + "\n\n</details>"


def _network(v: RunView) -> str:
    """The hosts `shell.network`'s allow-list refused, with the command that asked."""
    if not v.network_refused:
        return ""
    rows = ["| host refused | by the command |", "| --- | --- |"]
    for r in v.network_refused[:MAX_REFUSED]:
        host = code(f"{r['host']}:{r['port']}", table=True)
        rows.append(f"| {host} | {code(r['command'], table=True)} |")
    if len(v.network_refused) > MAX_REFUSED:
        rows.append(f"| … and {len(v.network_refused) - MAX_REFUSED} more | |")
    return "\n".join(rows)


def _notes(v: RunView) -> str:
    return "\n".join(f"> ⚠️ {code(p)}" for p in v.problems[:10])
