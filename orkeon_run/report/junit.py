"""`orkeon report --format junit`: JUnit XML for the test-report views of GitLab
(`artifacts:reports:junit`), Jenkins (`junit`), Buildkite Test Engine and the GitHub
test-report actions.

One `<testsuite>` per kind: `orkeon.STEP.roles` (a test case per role), `orkeon.STEP.audits`
(one per audit), `orkeon.review.checks` (one per check: `fail` a failure, `error` an error) and `orkeon.STEP` (one case, `result`, failing when the run did not
succeed, so a run that failed for another reason never shows all green). The subset
these readers share: `testsuites`/`testsuite` with `name`, `tests`, `failures`, `errors`,
`skipped`, `time`; `testcase` with `classname`, `name` (unique within its classname:
GitLab keeps only the first of duplicates), `time`; `failure`/`error` with a `message`
and the details as text (GitLab shows only the text); `skipped`; `system-out`.

A role that succeeded passes; `failed` and `stopped` are failures; `budget_exhausted`,
`interrupted` and `unfinished` are errors (it did not get to finish); a role that never
started is skipped. Text from the run is escaped by ElementTree, and characters XML 1.0
cannot hold (NUL and other control characters, lone surrogates) are written escaped
(`\\x00`, `\\ud800`).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

from .checks import junit_checks
from .fmt import clip, money, one_line, stages
from .model import AuditView, RoleView, RunView

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
TEXT_CAP = 20_000
FAILURES = {"failed", "stopped"}


def xml_text(value: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], value)


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def junit(v: RunView) -> str:
    step = v.step or "run"
    root = ET.Element("testsuites", {"name": xml_text(f"orkeon {step} {v.run_id}")})
    suites = [_run_suite(v, step), _roles_suite(v, step)]
    if v.audits:
        suites.append(_audits_suite(v, step))
    if v.checks:  # a review: a test case per check
        checks = _suite(f"orkeon.{step}.checks", v)
        junit_checks(checks, f"orkeon.{step}.checks", v.checks, _el)
        suites.append(checks)
    for suite in suites:
        root.append(suite)
    _count(root, suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(name: str, v: RunView) -> ET.Element:
    attrs = {"name": xml_text(name)}
    if v.started is not None:
        # JUnit's schema: a local time without a zone; orkeon's are UTC.
        attrs["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(v.started))
    return ET.Element("testsuite", attrs)


def _case(suite: ET.Element, classname: str, name: str, seconds: float) -> ET.Element:
    return _el(suite, "testcase", classname=classname, name=name, time=f"{max(seconds, 0.0):.3f}")


def _run_suite(v: RunView, step: str) -> ET.Element:
    suite = _suite(f"orkeon.{step}", v)
    props = _el(suite, "properties")
    facts = {
        "run_id": v.run_id,
        "step": step,
        "status": v.status,
        "exit_code": "" if v.exit_code is None else str(v.exit_code),
        "run_dir": v.run_dir,
        "cost_usd": "" if v.budget.get("usd") is None else str(v.budget.get("usd")),
    }
    for key, value in facts.items():
        _el(props, "property", name=key, value=value)
    case = _case(suite, f"orkeon.{step}", "result", float(v.budget.get("used_seconds") or 0.0))
    if v.status != "succeeded":
        word = v.status if v.finished else "unfinished (no result: killed, or still running)"
        message = one_line(f"{word}: {v.error}" if v.error else word, 500)
        details = f"status: {word}\nexit code: {v.exit_code}\n" + (
            f"error: {v.error}\n" if v.error else ""
        )
        tag = "failure" if v.status in FAILURES else "error"
        _el(case, tag, details, message=message, type=v.status)
    return suite


def _roles_suite(v: RunView, step: str) -> ET.Element:
    suite = _suite(f"orkeon.{step}.roles", v)
    classname = f"orkeon.{step}.roles"
    for role in v.roles:
        case = _case(suite, classname, role.name, role.seconds)
        out = _role_out(v, role)
        if role.status == "not_started":
            _el(case, "skipped", message="the role never started")
        elif role.status != "succeeded":
            message = one_line(f"{role.status}: {role.error}" if role.error else role.status, 500)
            tag = "failure" if role.status in FAILURES else "error"
            _el(case, tag, out, message=message, type=role.status)
        _el(case, "system-out", out)
    return suite


def _role_out(v: RunView, role: RoleView) -> str:
    by = f" ({stages(role.refused_by)})" if role.refused_by else ""
    lines = [
        f"status: {role.status}" + (f": {role.error}" if role.error else ""),
        f"{role.turns} turns, {role.calls} calls, {role.refused} refused{by}",
        f"tokens in/out: {role.tokens_in}/{role.tokens_out}, cost {money(role.usd)}",
    ]
    refused = [c for c in v.refused_calls if c.role == role.name]
    for c in refused[:20]:
        lines.append(f"\nrefused call {c.seq} {c.tool} {one_line(c.target, 200)} (by {c.stage}):")
        lines.append(clip(c.result, 2000))
    for h in (h for c in v.calls if c.role == role.name for h in c.hooks if h.decision == "failed"):
        lines.append(f"\nhook failed: {h.event} {h.command}: exit {h.exit_code}: {h.first_line}")
    return clip("\n".join(lines), TEXT_CAP)


def _audits_suite(v: RunView, step: str) -> ET.Element:
    suite = _suite(f"orkeon.{step}.audits", v)
    classname = f"orkeon.{step}.audits"
    seen: set[str] = set()
    for a in v.audits:
        name = f"audit of batch {a.batch}"
        if name in seen:
            name += f" (attempt {a.attempt})"
        base, n = name, 1
        while name in seen:  # a pipeline audits a batch again in one attempt, after repairs
            n += 1
            name = f"{base} #{n}"
        seen.add(name)
        case = _case(suite, classname, name, _audit_seconds(v, a))
        if not a.passed:
            details = a.output_tail
            if a.outside_roots:
                details = (
                    "changed outside the roots:\n" + "\n".join(a.outside_roots) + "\n\n" + details
                )
            _el(
                case,
                "failure",
                clip(details, TEXT_CAP),
                message=one_line(a.what_failed, 500),
                type="audit",
            )
    return suite


def _audit_seconds(v: RunView, a: AuditView) -> float:
    """From the batch's last role event to the audit's record: the audit's own time."""
    if a.ts is None:
        return 0.0
    ends = [r.last for r in v.roles if r.batch == a.batch and r.last is not None and r.last <= a.ts]
    return a.ts - max(ends) if ends else 0.0


def _count(root: ET.Element, suites: list[ET.Element]) -> None:
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    total_time = 0.0
    for suite in suites:
        cases = suite.findall("testcase")
        n = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        seconds = sum(float(c.get("time", "0")) for c in cases)
        for key, value in n.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{seconds:.3f}")
        total_time += seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
