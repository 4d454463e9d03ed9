"""The merged report (collect.report) as Markdown, HTML or JUnit XML.

Every text that comes from a run (an error line, an id) is escaped for the format: a
model or a workspace may have written it. Markdown lists every job that did not succeed,
and every job when there are at most ROWS_MAX (a GitHub step summary holds 1 MiB);
HTML and JUnit list every job.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any
from xml.etree import ElementTree as ET

from ..units import count, duration, money
from .collect import STAGES
from .jobdir import OUTCOMES

ROWS_MAX = 1000
COLUMNS = ("id", "step", "status", "calls", "refused", "hook_failures", "tokens", "usd", "seconds")
# Characters XML 1.0 cannot hold, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _usd(value: Any) -> str:
    return money(value)


def _cells(row: dict[str, Any]) -> list[str]:
    return [
        row["id"],
        str(row["step"]),
        row["status"],
        str(row["calls"]),
        str(row["refused"]),
        str(row["hook_failures"]),
        f"{row['tokens_in']}/{row['tokens_out']}",
        _usd(row["usd"]),
        duration(row["seconds"]),
    ]


def _summary_lines(rep: dict[str, Any]) -> list[tuple[str, str]]:
    jobs = rep["jobs"]
    by_status = ", ".join(f"{jobs[o]} {o}" for o in OUTCOMES if jobs[o]) or "none"
    by = rep["refused_by"]
    stages = ", ".join(f"{by[s]} {s}" for s in STAGES if by[s])
    unknown = rep["usd_unknown"]
    cost = money(rep["usd"]) + (f" ({count(unknown, 'job')} of unknown price)" if unknown else "")
    return [
        ("jobs", f"{jobs['total']}: {by_status}"),
        ("tool calls", str(rep["calls"])),
        ("refused", f"{rep['refused']}" + (f" ({stages})" if stages else "")),
        ("hook failures", str(rep["hook_failures"])),
        ("model turns", str(rep["turns"])),
        ("tokens in / out", f"{rep['tokens_in']} / {rep['tokens_out']}"),
        ("cost", cost),
        ("time charged", duration(rep["seconds"])),
        *_cap_lines(rep.get("cap")),
    ]


CAP_NAMES = {"usd": "batch cap: cost", "tokens": "batch cap: tokens", "seconds": "batch cap: time"}


def _cap_lines(cap: dict[str, Any] | None) -> list[tuple[str, str]]:
    """`$16.00 of a $15.50 cap (over by $0.50; 14 jobs skipped)` per capped total."""
    if not cap:
        return []
    show = {"usd": money, "seconds": duration, "tokens": lambda v: f"{v:.0f}"}
    out = []
    for key, name in CAP_NAMES.items():
        part = cap.get(key)
        if isinstance(part, dict):
            fmt = show[key]
            text = f"{fmt(part['spent'])} of a {fmt(part['cap'])} cap"
            notes = [f"over by {fmt(part['overshoot'])}"] if part.get("overshoot") else []
            if cap.get("skipped"):
                notes.append(f"{cap['skipped']} jobs skipped")
            out.append((name, text + (f" ({'; '.join(notes)})" if notes else "")))
    return out


def _md_text(text: Any) -> str:
    """A table cell: no line breaks, pipes escaped, Markdown and HTML characters inert."""
    flat = " ".join(str(text).split())
    return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", flat)


def markdown(rep: dict[str, Any]) -> str:
    out = ["# orkeon jobs", "", "| | |", "| --- | --- |"]
    out += [f"| {k} | {_md_text(v)} |" for k, v in _summary_lines(rep)]
    out += ["", "## Slowest", ""]
    out += [f"- {_md_text(s['id'])}: {duration(s['seconds'])}" for s in rep["slowest"]]
    out += ["", "## Most expensive", ""]
    out += [
        f"- {_md_text(c['id'])}: {_usd(c['usd'])}, {c['tokens']} tokens"
        for c in rep["most_expensive"]
    ]
    rows = rep["rows"]
    bad = [r for r in rows if r["status"] != "succeeded"]
    header = ["| " + " | ".join(COLUMNS) + " | error |", "|" + " --- |" * (len(COLUMNS) + 1)]
    if bad:
        out += ["", "## Jobs that did not succeed", "", *header]
        out += [_md_row(r) for r in bad]
    out += ["", "## Jobs", ""]
    if len(rows) <= ROWS_MAX:
        out += [*header, *(_md_row(r) for r in rows)]
    else:
        out.append(f"{count(len(rows), 'job')}: every row is in `orkeon jobs merge --format json`.")
    return "\n".join(out) + "\n"


def _md_row(row: dict[str, Any]) -> str:
    cells = [_md_text(c) for c in _cells(row)] + [_md_text(row["error"] or "")]
    return "| " + " | ".join(cells) + " |"


def html_page(rep: dict[str, Any]) -> str:
    """One self-contained page in the run report's style (report/html_assets.py): the same
    colours, tables that scroll on a narrow screen, and a policy that lets nothing run or
    load (the page has no script)."""
    from ..report.html_assets import STYLE

    e = html.escape
    policy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>orkeon jobs</title><style>{STYLE}{_JOB_STYLE}</style></head><body><main>",
        "<h1>orkeon jobs</h1><table>",
        *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _summary_lines(rep)),
        "</table><h2>Slowest</h2><ol>",
        *(f"<li><code>{e(s['id'])}</code>: {duration(s['seconds'])}</li>" for s in rep["slowest"]),
        "</ol><h2>Most expensive</h2><ol>",
        *(
            f"<li><code>{e(c['id'])}</code>: {e(_usd(c['usd']))}, {c['tokens']} tokens</li>"
            for c in rep["most_expensive"]
        ),
        "</ol><h2>Jobs</h2><table><tr>",
        *(f"<th>{e(c)}</th>" for c in (*COLUMNS, "error")),
        "</tr>",
    ]
    for row in rep["rows"]:
        cells = "".join(f"<td>{e(c)}</td>" for c in _cells(row))
        parts.append(f'<tr class="{e(row["status"])}">{cells}<td>{e(row["error"] or "")}</td></tr>')
    parts.append("</table></main></body></html>")
    return "\n".join(parts) + "\n"


# A job's row takes its status's colour, as a status word does in the run report.
_JOB_STYLE = (
    "tr.succeeded td:nth-child(3){color:var(--ok)}"
    "tr.failed td:nth-child(3),tr.provider_failed td:nth-child(3),tr.error td:nth-child(3),"
    "tr.not_started td:nth-child(3),tr.unfinished td:nth-child(3),"
    "tr.interrupted td:nth-child(3){color:var(--bad)}"
    "tr.budget_exhausted td:nth-child(3),tr.skipped td:nth-child(3){color:var(--warn)}"
)


def junit(rep: dict[str, Any]) -> str:
    """One testsuite, one testcase per job (classname `orkeon.jobs.STEP`, name the id):
    failed, provider_failed and budget_exhausted are failures; error, not_started,
    unfinished and interrupted are errors; a job skipped for the batch's cap is
    `<skipped>` (not failed)."""
    rows = rep["rows"]
    failures = sum(r["status"] in ("failed", "provider_failed", "budget_exhausted") for r in rows)
    errors = sum(r["status"] in ("error", "not_started", "unfinished", "interrupted") for r in rows)
    attrs = {
        "name": "orkeon jobs",
        "tests": str(len(rows)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(sum(r["status"] == "skipped" for r in rows)),
        "time": f"{rep['seconds']:.3f}",
    }
    suites = ET.Element("testsuites", attrs)
    suite = ET.SubElement(suites, "testsuite", attrs)
    for row in rows:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": _xml(f"orkeon.jobs.{row['step']}"),
                "name": _xml(row["id"]),
                "time": f"{row['seconds']:.3f}",
            },
        )
        status = row["status"]
        if status == "succeeded":
            continue
        if status == "skipped":
            ET.SubElement(case, "skipped", {"message": _xml(row["error"] or status)})
            continue
        tag = "failure" if status in ("failed", "provider_failed", "budget_exhausted") else "error"
        message = _xml(row["error"] or status)
        detail = ET.SubElement(case, tag, {"type": status, "message": message})
        detail.text = _xml(
            json.dumps({k: row[k] for k in ("dir", "calls", "refused", "exit_code")})
        )
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
