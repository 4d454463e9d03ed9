"""`orkeon report --format junit`: JUnit XML as GitLab, Jenkins, Buildkite and the GitHub
test-report actions read it.

Checked with ElementTree (strict XML) for the attributes those readers require, and with
junitparser, the parser of the publish-unit-test-result GitHub action, for what a reader
makes of it."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from kit.report import HOSTILE, Runs, make_runs

from orkeon_run.report import render
from orkeon_run.report.junit import xml_text

junitparser = pytest.importorskip("junitparser")


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory)


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def check_shape(root: ET.Element) -> None:
    """What every reader needs: suite names and counts, case classname/name/time, a
    failure's message and text, unique names within a classname."""
    assert root.tag == "testsuites"
    total = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in root.iter("testsuite"):
        assert suite.get("name") and float(suite.get("time", "x")) >= 0
        found = suite.findall("testcase")
        counts = {
            "tests": len(found),
            "failures": sum(c.find("failure") is not None for c in found),
            "errors": sum(c.find("error") is not None for c in found),
            "skipped": sum(c.find("skipped") is not None for c in found),
        }
        for key, n in counts.items():
            assert suite.get(key) == str(n), (suite.get("name"), key)
            total[key] += n
        names = [(c.get("classname"), c.get("name")) for c in found]
        assert len(names) == len(set(names))
        for case in found:
            assert case.get("classname") and case.get("name") and float(case.get("time", "x")) >= 0
            for tag in ("failure", "error"):
                for bad in case.findall(tag):
                    assert bad.get("message") and (bad.text or "").strip()
    assert {k: root.get(k) for k in total} == {k: str(n) for k, n in total.items()}


def test_one_case_per_role_and_audit_and_the_result(runs: Runs) -> None:
    root = ET.fromstring(render(runs.mixed, "junit"))
    check_shape(root)
    found = cases(root)
    assert sorted(found) == [
        "orkeon.dev-batches.audits::audit of batch b1",
        "orkeon.dev-batches.roles::b1/a",
        "orkeon.dev-batches.roles::b1/b",
        "orkeon.dev-batches::result",
    ]
    audit = found["orkeon.dev-batches.audits::audit of batch b1"].find("failure")
    assert audit is not None
    assert audit.get("message") == "failed: test -f src/a/missing.py"
    assert audit.text == "[test -f src/a/missing.py exited 1]"
    result = found["orkeon.dev-batches::result"].find("failure")
    assert result is not None and result.get("type") == "failed"
    assert result.get("message") == "failed: the audit of batch b1 failed: test -f src/a/missing.py"
    role = found["orkeon.dev-batches.roles::b1/a"]
    assert role.find("failure") is None  # it succeeded; its refusals are in its output
    out = role.findtext("system-out") or ""
    assert "4 turns, 6 calls, 4 refused (gate 1, hook 1, invalid 1, roots 1)" in out
    assert "[refused by the gate: Write(secret/**)]" in out
    assert "hook failed: post-tool" in out and HOSTILE in out
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["status"] == "failed" and props["exit_code"] == "1"


def test_a_stopped_role_fails_and_a_killed_run_errs(runs: Runs) -> None:
    root = ET.fromstring(render(runs.stopped, "junit"))
    check_shape(root)
    stopped = cases(root)["orkeon.dev-batches.roles::b1/a"].find("failure")
    assert stopped is not None and stopped.get("message") == "stopped: a stops here"
    root = ET.fromstring(render(runs.killed, "junit"))
    check_shape(root)
    found = cases(root)
    unfinished = found["orkeon.dev-batches.roles::b1/a"].find("error")
    assert unfinished is not None and unfinished.get("type") == "unfinished"
    skipped = found["orkeon.dev-batches.roles::b1/b"].find("skipped")
    assert skipped is not None and skipped.get("message") == "the role never started"
    result = found["orkeon.dev-batches::result"].find("error")
    assert result is not None and result.get("message", "").startswith("unfinished")
    assert "orkeon.dev-batches.audits" not in {s.get("name") for s in root.iter("testsuite")}


def test_junitparser_reads_it(runs: Runs, tmp_path: Path) -> None:
    path = tmp_path / "orkeon.xml"
    path.write_text(render(runs.mixed, "junit"))
    xml = junitparser.JUnitXml.fromfile(str(path))
    outcomes = {}
    for suite in xml:
        for case in suite:
            kinds = [type(r).__name__ for r in case.result]
            outcomes[case.name] = kinds
    assert outcomes == {
        "result": ["Failure"],
        "b1/a": [],
        "b1/b": [],
        "audit of batch b1": ["Failure"],
    }
    assert (xml.tests, xml.failures, xml.errors) == (4, 2, 0)


def test_characters_xml_cannot_hold_are_escaped(runs: Runs, tmp_path: Path) -> None:
    """A NUL or an escape character in what the model read must not break the file."""
    rd = tmp_path / "copy"
    shutil.copytree(runs.mixed, rd)
    events = rd / "events.jsonl"
    events.write_text(
        events.read_text().replace("Write(secret/**)", "Write(\\u0000\\u001b[31m\\ud800)")
    )
    text = render(rd, "junit")
    root = ET.fromstring(text)  # strict: would raise on an invalid character
    out = cases(root)["orkeon.dev-batches.roles::b1/a"].findtext("system-out") or ""
    assert "[refused by the gate: Write(\\x00\\x1b[31m\\ud800)]" in out
    assert xml_text("a\x00b\x1fc\td\n") == "a\\x00b\\x1fc\td\n"
