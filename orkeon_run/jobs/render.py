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

from .collect import STAGES
from .jobdir import OUTCOMES

ROWS_MAX = 1000
COLUMNS = ("id", "step", "status", "calls", "refused", "hook_failures", "tokens", "usd", "seconds")
# Characters XML 1.0 cannot hold, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _usd(value: Any) -> str:
    return "unknown" if value is None else f"${value:.4f}"


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
        f"{row['seconds']:.2f}",
    ]


def _summary_lines(rep: dict[str, Any]) -> list[tuple[str, str]]:
    jobs = rep["jobs"]
    by_status = ", ".join(f"{jobs[o]} {o}" for o in OUTCOMES if jobs[o]) or "none"
    by = rep["refused_by"]
    stages = ", ".join(f"{by[s]} {s}" for s in STAGES if by[s])
    cost = f"${rep['usd']:.4f}" + (
        f" ({rep['usd_unknown']} jobs of unknown price)" if rep["usd_unknown"] else ""
    )
    return [
        ("jobs", f"{jobs['total']}: {by_status}"),
        ("tool calls", str(rep["calls"])),
        ("refused", f"{rep['refused']}" + (f" ({stages})" if stages else "")),
        ("hook failures", str(rep["hook_failures"])),
        ("model turns", str(rep["turns"])),
        ("tokens in / out", f"{rep['tokens_in']} / {rep['tokens_out']}"),
        ("cost", cost),
        ("time charged", f"{rep['seconds']:.2f} s"),
    ]


def _md_text(text: Any) -> str:
    """A table cell: no line breaks, pipes escaped, Markdown and HTML characters inert."""
    flat = " ".join(str(text).split())
    return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", flat)


def markdown(rep: dict[str, Any]) -> str:
    out = ["# orkeon jobs", "", "| | |", "| --- | --- |"]
    out += [f"| {k} | {_md_text(v)} |" for k, v in _summary_lines(rep)]
    out += ["", "## Slowest", ""]
    out += [f"- {_md_text(s['id'])}: {s['seconds']:.2f} s" for s in rep["slowest"]]
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
        out.append(f"{len(rows)} jobs: every row is in `orkeon jobs merge --format json`.")
    return "\n".join(out) + "\n"


def _md_row(row: dict[str, Any]) -> str:
    cells = [_md_text(c) for c in _cells(row)] + [_md_text(row["error"] or "")]
    return "| " + " | ".join(cells) + " |"


def html_page(rep: dict[str, Any]) -> str:
    e = html.escape
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8"><title>orkeon jobs</title>',
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
        ".failed,.provider_failed,.error,.not_started,.unfinished,.interrupted{color:#b00}"
        ".budget_exhausted{color:#a60}</style></head><body>",
        "<h1>orkeon jobs</h1><table>",
        *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _summary_lines(rep)),
        "</table><h2>Slowest</h2><ol>",
        *(f"<li>{e(s['id'])}: {s['seconds']:.2f} s</li>" for s in rep["slowest"]),
        "</ol><h2>Most expensive</h2><ol>",
        *(
            f"<li>{e(c['id'])}: {e(_usd(c['usd']))}, {c['tokens']} tokens</li>"
            for c in rep["most_expensive"]
        ),
        "</ol><h2>Jobs</h2><table><tr>",
        *(f"<th>{e(c)}</th>" for c in (*COLUMNS, "error")),
        "</tr>",
    ]
    for row in rep["rows"]:
        cells = "".join(f"<td>{e(c)}</td>" for c in _cells(row))
        parts.append(f'<tr class="{e(row["status"])}">{cells}<td>{e(row["error"] or "")}</td></tr>')
    parts.append("</table></body></html>")
    return "\n".join(parts) + "\n"


def junit(rep: dict[str, Any]) -> str:
    """One testsuite, one testcase per job (classname `orkeon.jobs.STEP`, name the id):
    failed, provider_failed and budget_exhausted are failures; error, not_started,
    unfinished and interrupted are errors."""
    rows = rep["rows"]
    failures = sum(r["status"] in ("failed", "provider_failed", "budget_exhausted") for r in rows)
    errors = sum(r["status"] in ("error", "not_started", "unfinished", "interrupted") for r in rows)
    attrs = {
        "name": "orkeon jobs",
        "tests": str(len(rows)),
        "failures": str(failures),
        "errors": str(errors),
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
