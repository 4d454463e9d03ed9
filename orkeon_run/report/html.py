"""`orkeon report --format html`: one self-contained page (inline style and script, no
fetch from anywhere) with the timeline of batches, roles and calls, each call's outcome,
the text the model read and its hooks' decisions, the budget's use over time and the
audits.

Everything from the run passes `esc` (text and attribute values); the page is rendered
here, so a reader without scripts sees all of it, and the script only filters and opens.
The Content-Security-Policy lets no other script run and nothing load (html_assets.py).
"""

from __future__ import annotations

import json
from html import escape

from .. import units
from .fmt import clip, count, money, one_line, refusal, seconds, stages, utc
from .html_assets import SCRIPT, STYLE, csp
from .html_changes import changes_section, texts_section
from .html_chart import budget_chart
from .model import AuditView, BatchView, CallView, HookView, RoleView, RunView

TEXT_CAP = 4000
INPUT_CAP = 2000


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def html(v: RunView) -> str:
    title = f"orkeon {v.step or 'run'}: {v.status} — {v.run_id}"
    body = [
        _header(v),
        _toolbar(v),
        _timeline(v),
        _budget(v),
        _steps(v),
        _roles(v),
        _audits(v),
        changes_section(v, f"orkeon report {v.run_dir} --format patch"),
        texts_section(v),
        _calls(v),
        _other_hooks(v),
        _network(v),
        _plan(v),
        _footer(v),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp())}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(part for part in body if part)
        + f"\n</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def _dot(status: str) -> str:
    """A coloured dot before a status word (no emoji: a machine may have no emoji font)."""
    return f'<span class="dot {_cls(status)}"></span>'


def _cls(status: str) -> str:
    if status in ("succeeded", "passed"):
        return "ok"
    return "warn" if status in ("unfinished", "not_started", "interrupted") else "bad"


def _header(v: RunView) -> str:
    exit_part = f" (exit {v.exit_code})" if v.exit_code is not None else ""
    word = (
        v.status if v.finished else "unfinished: no result, the run was killed or is still running"
    )
    out = [
        f"<h1>{_dot(v.status)} orkeon {esc(v.step or 'run')}: "
        f'<span class="{_cls(v.status)}" id="status">{esc(word)}</span>{esc(exit_part)}</h1>'
    ]
    if v.error:
        out.append(f'<div class="why"><b>Why:</b> <code>{esc(v.error)}</code></div>')
    b = v.budget
    tokens = int(b.get("tokens_in") or 0) + int(b.get("tokens_out") or 0) or int(
        b.get("tokens") or 0
    )
    turns = int(b.get("turns") or 0)
    facts = [
        f"run <code>{esc(v.run_id)}</code>",
        units.count(v.attempts, "attempt"),
        f"{units.count(len(v.calls), 'call')}, {count(len(v.refused_calls))} refused",
        esc(units.spent_of("turns", turns, v.limits["turns"]) if v.limits.get("turns")
            else units.count(turns, "turn")),
        units.count(tokens, "token"),
        esc(money(b.get("usd") if "usd" in b else 0.0)),
        esc(seconds(float(b.get("used_seconds") or 0.0))) + " charged"
        + (f" of {esc(seconds(limit))}" if (limit := v.limits.get("seconds")) else ""),
    ]  # fmt: skip
    if b.get("exhausted"):
        facts.append(f'<b class="bad">{esc(b["exhausted"])} budget spent</b>')
    out.append(f'<div class="facts">{" · ".join(facts)}</div>')
    for name, path in v.artifacts.items():
        out.append(f'<div class="facts">{esc(name)}: <code>{esc(path)}</code></div>')
    return "<header>\n" + "\n".join(out) + "\n</header>"


def _toolbar(v: RunView) -> str:
    names = sorted({c.role for c in v.calls})
    options = "".join(f'<option value="{esc(n)}">{esc(n)}</option>' for n in names)
    return (
        '<nav class="toolbar">'
        '<button type="button" data-filter="all" aria-pressed="true">All calls</button>'
        f'<button type="button" data-filter="refused">Refused ({len(v.refused_calls)})</button>'
        f'<button type="button" data-filter="hookfail">Hook failures ({_hookfail_count(v)})</button>'
        f'<select id="role" aria-label="role"><option value="">every role</option>{options}</select>'
        '<button type="button" id="expand">Expand all</button>'
        '<button type="button" id="collapse">Collapse all</button>'
        f'<span id="shown" class="muted">{units.count(len(v.calls), "call")}</span></nav>'
    )


def _hookfail_count(v: RunView) -> int:
    return sum(1 for c in v.calls if _hookfail(c))


def _hookfail(c: CallView) -> bool:
    return any(h.decision == "failed" for h in c.hooks)


class _Axis:
    """Positions on the timeline as percentages of the run's span."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.span = start, max(end - start, 1e-6)

    def left(self, ts: float) -> float:
        return min(max((ts - self.start) / self.span * 100, 0.0), 100.0)

    def width(self, a: float, b: float) -> float:
        return min(max((b - a) / self.span * 100, 0.0), 100.0 - self.left(a))


def _timeline(v: RunView) -> str:
    if v.started is None or v.ended is None or not v.roles:
        return ""
    starts = [r.first for r in v.roles if r.first is not None]
    axis = _Axis(min([v.started, *starts]), v.ended)
    calls: dict[str, list[CallView]] = {}
    for c in v.calls:
        calls.setdefault(c.role, []).append(c)
    rows: list[str] = []
    done: set[str] = set()
    for batch in v.batches:
        rows.append(_batch_row(v, batch, axis))
        for role in v.roles:
            if role.name in batch.roles and role.name not in done:
                rows.append(_role_row(role, calls.get(role.name, []), axis))
                done.add(role.name)
    rest = [r for r in v.roles if r.name not in done]
    if rest and v.batches:
        rows.append('<div class="label batch">other roles</div><div></div>')
    rows += [_role_row(r, calls.get(r.name, []), axis) for r in rest]
    total = seconds(axis.span)
    return (
        '<section id="timeline"><h2>Timeline</h2>'
        f'<div class="tl">{"".join(rows)}<div></div>'
        f'<div class="axis"><span>{esc(utc(axis.start))}</span><span>+{esc(total)}</span></div></div>'
        '<p class="legend muted"><span><i style="background:var(--ok)"></i>call ran</span>'
        '<span><i style="background:var(--bad)"></i>refused</span>'
        '<span><i style="background:var(--warn)"></i>a hook failed</span>'
        "<span>● audit</span></p></section>"
    )


def _batch_row(v: RunView, batch: BatchView, axis: _Axis) -> str:
    name, attempt, start = batch.name, batch.attempt, batch.started
    marks = []
    if start is not None:
        marks.append(
            f'<div class="span" style="left:{axis.left(start):.3f}%;'
            f'width:{axis.width(start, batch.ended or v.ended or start):.3f}%"></div>'
        )
    for a in v.audits:
        if a.batch == name and a.attempt == attempt and a.ts is not None:
            word = "passed" if a.passed else "failed"
            marks.append(
                f'<a class="mark audit {word}" href="#audit-{esc(_audit_id(a))}" '
                f'style="left:{axis.left(a.ts):.3f}%" title="{esc(f"audit of {name}: {word}")}"></a>'
            )
    label = f"batch {name}" + (f" (attempt {attempt})" if v.attempts > 1 else "")
    return f'<div class="label batch" title="{esc(label)}">{esc(label)}</div><div class="track">{"".join(marks)}</div>'


def _role_row(role: RoleView, calls: list[CallView], axis: _Axis) -> str:
    marks = []
    if role.first is not None and role.last is not None:
        marks.append(
            f'<div class="span" style="left:{axis.left(role.first):.3f}%;'
            f'width:{axis.width(role.first, role.last):.3f}%"></div>'
        )
    for c in calls:
        kind = "refused" if c.outcome == "refused" else ("hookfail" if _hookfail(c) else "ran")
        tip = f"#{c.index} {c.tool} {one_line(c.target, 80)}: {refusal(c.stage)}"
        marks.append(
            f'<a class="mark {kind}" href="#call-{c.index}" title="{esc(tip)}" '
            f'style="left:{axis.left(c.started):.3f}%;width:{axis.width(c.started, c.ts):.3f}%"></a>'
        )
    return (
        f'<div class="label" title="{esc(role.name + ": " + role.status)}">{_dot(role.status)} {esc(role.name)}</div>'
        f'<div class="track">{"".join(marks)}</div>'
    )


def _budget(v: RunView) -> str:
    return budget_chart(v)


def _steps(v: RunView) -> str:
    """A pipeline's steps, in the order it ran them."""
    if not v.steps:
        return ""
    head = (
        "<tr><th>step</th><th>status</th><th class=n>exit</th><th class=n>roles</th>"
        "<th class=n>calls</th><th class=n>refused</th><th class=n>time</th><th>records</th></tr>"
    )
    rows = []
    for s in v.steps:
        err = f"<br><code>{esc(one_line(s.error, 300))}</code>" if s.error else ""
        exit_code = "—" if s.exit_code is None else str(s.exit_code)
        rows.append(
            f'<tr><td><code>{esc(s.name)}</code></td><td class="{_cls(s.status)}">'
            f"{_dot(s.status)} {esc(s.status)}{err}</td><td class=n>{exit_code}</td>"
            f"<td class=n>{s.roles}</td><td class=n>{s.calls}</td><td class=n>{s.refused}</td>"
            f"<td class=n>{esc(seconds(s.seconds))}</td><td><code>{esc(s.run_dir)}</code></td></tr>"
        )
    return f'<section id="steps"><h2>Steps</h2><table>{head}{"".join(rows)}</table></section>'


def _roles(v: RunView) -> str:
    if not v.roles:
        return ""
    head = (
        "<tr><th>role</th><th>status</th><th class=n>turns</th><th class=n>calls</th>"
        "<th>refused (by stage)</th><th class=n>tokens in / out</th><th class=n>cost</th>"
        "<th class=n>time</th></tr>"
    )
    rows = []
    for r in v.roles:
        err = f"<br><code>{esc(one_line(r.error, 300))}</code>" if r.error else ""
        by = f" ({esc(stages(r.refused_by))})" if r.refused_by else ""
        rows.append(
            f'<tr><td><code>{esc(r.name)}</code></td><td class="{_cls(r.status)}">'
            f"{_dot(r.status)} {esc(r.status)}{err}</td><td class=n>{r.turns}</td>"
            f"<td class=n>{r.calls}</td><td>{r.refused}{by}</td>"
            f"<td class=n>{count(r.tokens_in)} / {count(r.tokens_out)}</td>"
            f"<td class=n>{esc(money(r.usd))}</td><td class=n>{esc(seconds(r.seconds))}</td></tr>"
        )
    note = f'<p class="muted">Counts cover all {v.attempts} attempts.</p>' if v.attempts > 1 else ""
    return f'<section id="roles"><h2>Roles</h2><table>{head}{"".join(rows)}</table>{note}</section>'


def _audit_id(a: AuditView) -> str:
    return f"{a.batch}-{a.attempt}"


def _audits(v: RunView) -> str:
    if not v.audits:
        return ""
    items = []
    for a in v.audits:
        word = "passed" if a.passed else "failed"
        detail = ""
        if not a.passed:
            outside = "".join(f"<li><code>{esc(p)}</code></li>" for p in a.outside_roots[:50])
            detail = (
                (f"<p>Changed outside the roots:</p><ul>{outside}</ul>" if outside else "")
                + (
                    f"<p>Failed: <code>{esc(' '.join(a.failed_command))}</code></p>"
                    if a.failed_command
                    else ""
                )
                + f"<pre>{esc(clip(a.output_tail, TEXT_CAP))}</pre>"
            )
        items.append(
            f'<div id="audit-{esc(_audit_id(a))}" class="audit"><b>batch <code>{esc(a.batch)}</code></b>: '
            f'<span class="{_cls(word)}">{_dot(word)} {word}</span>{detail}</div>'
        )
    return f'<section id="audits"><h2>Audits</h2>{"".join(items)}</section>'


def _calls(v: RunView) -> str:
    if not v.calls:
        return '<section id="calls"><h2>Calls</h2><p class="muted">No tool calls.</p></section>'
    return f'<section id="calls"><h2>Calls</h2>{"".join(_call(c) for c in v.calls)}</section>'


def _call(c: CallView) -> str:
    classes = ["call", c.outcome] + (["hookfail"] if _hookfail(c) else [])
    what = refusal(c.stage)
    summary = (
        f'<span class="muted">#{c.index}</span> <code>{esc(c.role)}</code> call {c.seq} '
        f"<b>{esc(c.tool)}</b> <code>{esc(one_line(c.target, 120))}</code> — "
        f'<span class="what">{esc(what)}</span> <span class="muted">'
        f"{esc(seconds(c.tool_seconds + c.hook_seconds))}</span>"
    )
    inp = json.dumps(c.input, ensure_ascii=False, indent=2)
    hooks = _hook_table(c.hooks) if c.hooks else ""
    return (
        f'<details class="{" ".join(classes)}" id="call-{c.index}" data-role="{esc(c.role)}">'
        f'<summary>{summary}</summary><div class="body">'
        f"<div>The model read:</div><pre>{esc(clip(c.result, TEXT_CAP))}</pre>{hooks}"
        f"<details><summary>Input</summary><pre>{esc(clip(inp, INPUT_CAP))}</pre></details>"
        "</div></details>"
    )


def _hook_table(hooks: list[HookView], *, roles: bool = False) -> str:
    rows = []
    for h in hooks:
        who = f"<td><code>{esc(h.role)}</code></td>" if roles else ""
        name = f"{h.event} #{h.n}" if h.n is not None else h.event
        code = (
            "timed out"
            if h.timed_out
            else ("could not run" if h.exit_code is None else h.exit_code)
        )
        cls = {"passed": "ok", "refused": "bad"}.get(h.decision, "warn")
        rows.append(
            f"<tr>{who}<td>{esc(name)}</td><td><code>{esc(h.command)}</code></td><td class=n>{esc(code)}</td>"
            f'<td class=n>{esc(seconds(h.seconds))}</td><td class="{cls}">{esc(h.decision)}</td>'
            f"<td><code>{esc(one_line(h.first_line, 300))}</code></td></tr>"
        )
    head = (
        ("<tr><th>role</th>" if roles else "<tr>")
        + "<th>hook</th><th>command</th><th class=n>exit</th><th class=n>time</th><th>decision</th><th>first line</th></tr>"
    )
    return f"<table class=hooks>{head}{''.join(rows)}</table>"


def _other_hooks(v: RunView) -> str:
    if not v.hooks:
        return ""
    return f'<section id="hooks"><h2>Hooks outside calls</h2>{_hook_table(v.hooks, roles=True)}</section>'


def _network(v: RunView) -> str:
    """The hosts shell.network's allow-list refused (network.refused events)."""
    if not v.network_refused:
        return ""
    head = "<tr><th>host refused</th><th>by the command</th></tr>"
    rows = "".join(
        f"<tr><td><code>{esc(r['host'])}:{esc(r['port'])}</code></td>"
        f"<td><code>{esc(r['command'])}</code></td></tr>"
        for r in v.network_refused
    )
    return f'<section id="network"><h2>Network refused</h2><table>{head}{rows}</table></section>'


def _plan(v: RunView) -> str:
    if not v.plan_checks:
        return ""
    items = "".join(
        f"<p>Check {c['attempt']}: invalid, sent back to the planner</p><pre>{esc(clip(chr(10).join(c['problems']), TEXT_CAP))}</pre>"
        for c in v.plan_checks
    )
    return f'<section id="plan"><h2>Plan checks</h2>{items}</section>'


def _footer(v: RunView) -> str:
    problems = "".join(f'<li class="warn">{esc(p)}</li>' for p in v.problems)
    return (
        "<footer><h2>Run</h2><table>"
        f"<tr><th>run directory</th><td><code>{esc(v.run_dir)}</code></td></tr>"
        f"<tr><th>workspace</th><td><code>{esc(v.workspace)}</code></td></tr>"
        f"<tr><th>first event</th><td>{esc(utc(v.started))}</td></tr>"
        f"<tr><th>last event</th><td>{esc(utc(v.ended))}</td></tr></table>"
        + (f"<ul>{problems}</ul>" if problems else "")
        + "</footer>"
    )
