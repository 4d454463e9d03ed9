"""A review's checks (the result's `checks`, docs/output.md) in each report: a Markdown
section per check with its findings (a finding's `suggestion` as a GitHub suggestion
block), a JUnit test case per check (`fail` a failure, `error` an error), and the GitHub
annotations on the findings' lines (`error`/`warning`/`notice` by severity).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

from .fmt import clip, mark, one_line
from .markdown_text import code

MARK = {"pass": "succeeded", "fail": "failed", "error": "error"}


def suggestion_block(text: str) -> str:
    """`text` as a GitHub ```suggestion block (fenced so no line of it closes it)."""
    ticks = "`" * max(3, _ticks(text) + 1)
    return f"{ticks}suggestion\n{text.rstrip(chr(10))}\n{ticks}"


def _ticks(text: str) -> int:
    best = n = 0
    for c in text:
        n = n + 1 if c == "`" else 0
        best = max(best, n)
    return best


def markdown_checks(checks: list[dict[str, Any]]) -> str:
    """One `#### ` section per check: its verdict, summary and findings."""
    out = []
    for c in checks:
        verdict = str(c.get("verdict", ""))
        lines = [
            f"#### {mark(MARK.get(verdict, verdict))} check {code(str(c.get('name', '')))}: {verdict}"
        ]
        if c.get("summary"):
            lines.append(code(str(c["summary"]), limit=600))
        for f in c.get("findings") or []:
            where = f"{f['path']}:{f['line']}" + (f"-{f['end_line']}" if f.get("end_line") else "")
            lines.append(f"- {code(where)} {f['severity']}: {code(str(f['message']), limit=600)}")
            if f.get("suggestion") is not None:
                lines.append("\n" + suggestion_block(str(f["suggestion"])) + "\n")
        out.append("\n\n".join(lines))
    return "\n\n".join(out)


def junit_checks(
    suite: ET.Element, classname: str, checks: list[dict[str, Any]], el: Callable[..., ET.Element]
) -> None:
    """One test case per check in `suite`."""
    for c in checks:
        case = el(suite, "testcase", classname=classname, name=str(c.get("name", "")), time="0.000")
        verdict = c.get("verdict")
        if verdict in ("fail", "error"):
            details = "\n".join(
                f"{f['path']}:{f['line']}: {f['severity']}: {f['message']}"
                for f in c.get("findings") or []
            )
            tag = "failure" if verdict == "fail" else "error"
            summary = one_line(str(c.get("summary", "")), 500)
            el(case, tag, clip(details, 20_000), message=summary, type="check")


def finding_annotations(
    checks: list[dict[str, Any]], file_of: Callable[[str], str]
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(kind, message, properties) for each finding: on its file and lines."""
    kinds = {"error": "error", "warning": "warning", "notice": "notice"}
    for c in checks:
        for f in c.get("findings") or []:
            props = {
                "file": file_of(f["path"]),
                "line": str(f["line"]),
                "title": f"orkeon review: {c.get('name')}",
            }
            if f.get("end_line"):
                props["endLine"] = str(f["end_line"])
            yield kinds.get(f.get("severity"), "warning"), str(f["message"]), props
