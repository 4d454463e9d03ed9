"""`orkeon run review` through the command line with the scripted model: the change from
`review.base` | `review.commit` | `review.uncommitted`, checks from the inputs and trusted
`.orkeon/checks/*.md`, each check's verdict checked by the output-schema mechanism, and
the read-only crew (docs/inputs.md, "review"; docs/output.md, "checks")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kit import git
from kit.cli import clean_environment, orkeon, run_dir, run_json
from kit.fakes import anthropic_api
from kit.fakes.anthropic_api import AnthropicFake
from kit.steps import calls, events, make_workspace, shell, user_messages, write

from orkeon_run.config.trust import record_checks_trust

APP = "def main():\n    return 1\n"
NEW_APP = "def main():\n    print('hi')\n    return 2\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository on `main` with src/app.py, and a branch `feat` that changes it and
    adds docs/x.md."""
    clean_environment(tmp_path, monkeypatch)
    ws = make_workspace(tmp_path, {"README.md": "# demo\n", "src/app.py": APP})
    git(ws, "branch", "-M", "main")
    git(ws, "checkout", "-q", "-b", "feat")
    (ws / "src" / "app.py").write_text(NEW_APP)
    (ws / "docs").mkdir()
    (ws / "docs" / "x.md").write_text("# x\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "feat")
    return ws


def verdict(v: str, summary: str = "ok", findings: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"text": json.dumps({"verdict": v, "summary": summary, "findings": list(findings)})}


def finding(path: str, line: int, **more: Any) -> dict[str, Any]:
    return {"path": path, "line": line, "severity": "error", "message": "no print", **more}


CHECKS = [
    {"name": "No print", "instructions": "Code must not print."},
    {"name": "docs", "instructions": "Docs have a title.", "paths": ["docs/**"]},
]


def review_doc(
    script: dict[str, Any], checks: list[dict[str, Any]] = CHECKS, **change: Any
) -> dict[str, Any]:
    return {
        "review": {**(change or {"base": "main"}), "checks": checks},
        "model": {"provider": "scripted", "script": script},
    }


def test_every_check_passes_exit_0(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/output.md, "checks": exit 0 when every check passed; each check reads the
    change from the merge base (docs/inputs.md, "review.base")."""
    script = {"reviewer/no-print": [verdict("pass")], "reviewer/docs": [verdict("pass")]}
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script))
    assert code == 0, result["error"]
    assert [(c["name"], c["verdict"]) for c in result["checks"]] == [
        ("No print", "pass"),
        ("docs", "pass"),
    ]
    (first,) = user_messages(run_dir(ws, result), "reviewer/no-print")
    assert "+    print('hi')" in first and "Code must not print." in first
    assert "files: docs/x.md, src/app.py" in first


def test_a_failed_and_a_never_answered_check(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/output.md, "checks": exit 1 when one failed; a check the model never answered
    validly is `error`, never `pass` (kind `output`)."""
    script = {
        "reviewer/no-print": [
            verdict("fail", "prints", [finding("src/app.py", 2, suggestion="    pass")])
        ],
        "reviewer/docs": [{"text": "Looks fine to me!"}, {"text": ""}, {"text": "{}"}],
    }
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script))
    assert code == 1 and result["status"] == "failed"
    failed, never = result["checks"]
    assert failed["verdict"] == "fail" and failed["findings"] == [
        finding("src/app.py", 2, suggestion="    pass")
    ]
    assert never["verdict"] == "error" and never["summary"].startswith("never answered")
    assert result["error"]["kind"] == "output"
    assert "check failed: No print" in result["error"]["message"]
    assert "check never answered: docs" in result["error"]["message"]
    assert len(events(run_dir(ws, result), "output.invalid")) == 3


def test_a_failed_check_alone_is_kind_audit(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/output.md: a failed check is `error.kind` `audit` (exit 1)."""
    script = {"reviewer/no-print": [verdict("fail", "prints")], "reviewer/docs": [verdict("pass")]}
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script))
    assert code == 1 and result["error"]["kind"] == "audit"


def test_findings_outside_the_change_are_dropped(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/inputs.md, "review": a finding whose path and lines are not in the change is
    dropped with a warning event."""
    findings = [
        finding("src/app.py", 2),  # an added line
        finding("src/app.py", 1, end_line=3),  # context and added lines: in the hunk
        finding("src/app.py", 2, end_line=9),  # runs past the hunk
        finding("README.md", 1),  # a file the change does not touch
        finding("src/nope.py", 1),
    ]
    script = {
        "reviewer/no-print": [verdict("fail", "x", findings)],
        "reviewer/docs": [verdict("pass")],
    }
    code, result, err = run_json(capsys, "review", ws, doc=review_doc(script))
    assert code == 1
    assert result["checks"][0]["findings"] == findings[:2]
    dropped = events(run_dir(ws, result), "review.finding_dropped")
    assert [(d["path"], d["line"]) for d in dropped] == [
        ("src/app.py", 2),
        ("README.md", 1),
        ("src/nope.py", 1),
    ]
    assert "a finding on README.md:1 is dropped" in err


def test_a_check_whose_paths_the_change_misses_is_not_asked(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/inputs.md, "review.checks": `paths` globs; the change touches none: pass
    without a model turn."""
    checks = [{"name": "api", "instructions": "x", "paths": ["api/**"]}]
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc({}, checks))
    assert code == 0 and result["checks"][0]["verdict"] == "pass" and result["roles"] == []


def test_commit_and_uncommitted(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "review": `commit` (its own change) and `uncommitted: true` (the
    work tree against HEAD, new files included)."""
    script = {"reviewer/no-print": [verdict("pass")]}
    checks = CHECKS[:1]
    code, result, _ = run_json(
        capsys, "review", ws, doc=review_doc(script, checks, commit="HEAD~0")
    )
    assert code == 0
    first = user_messages(run_dir(ws, result), "reviewer/no-print")[0]
    assert "docs/x.md" in first and "print('hi')" in first
    (ws / "README.md").write_text("# demo\nmore\n")
    (ws / "new.txt").write_text("brand new\n")
    code, result, _ = run_json(
        capsys, "review", ws, doc=review_doc(script, checks, uncommitted=True)
    )
    assert code == 0
    first = user_messages(run_dir(ws, result), "reviewer/no-print")[0]
    assert "+more" in first and "+brand new" in first and "print('hi')" not in first
    assert ".orkeon/runs" not in first


def test_the_reviewer_writes_nothing(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "review": read-only: no writing tool, git only to read."""
    script = {
        "reviewer/no-print": [
            {
                "tool_calls": [
                    write("src/app.py", "x\n"),
                    shell("git log --oneline"),
                    shell("git commit -qam x"),
                    shell("touch made.txt"),
                ]
            },
            verdict("pass"),
        ]
    }
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script, CHECKS[:1]))
    assert code == 0
    made = calls(run_dir(ws, result), "reviewer/no-print")
    assert [c["outcome"] for c in made] == ["refused", "ran", "refused", "refused"]
    assert "feat" in str(made[1]["result"])
    assert (ws / "src" / "app.py").read_text() == NEW_APP and not (ws / "made.txt").exists()
    assert git(ws, "status", "--porcelain", "--untracked-files=no").strip() == ""


def check_file(ws: Path, name: str, text: str) -> None:
    folder = ws / ".orkeon" / "checks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_check_files_count_once_trusted(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inputs.md, "review": `.orkeon/checks/*.md` (front matter `name`, `paths`)
    count only once trusted (`orkeon hooks trust`)."""
    check_file(ws, "sec.md", "---\nname: secrets\npaths: ['src/**']\n---\nNo keys in code.\n")
    script = {"reviewer/no-print": [verdict("pass")], "reviewer/secrets": [verdict("pass")]}
    code, result, err = run_json(capsys, "review", ws, doc=review_doc(script, CHECKS[:1]))
    assert code == 0 and [c["name"] for c in result["checks"]] == ["No print"]
    assert "check file(s) left out: not trusted" in err
    code, out, _ = orkeon(capsys, "hooks", "trust", "--workspace", str(ws))
    assert code == 0 and ".orkeon/checks" in out
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script, CHECKS[:1]))
    assert code == 0 and [c["name"] for c in result["checks"]] == ["No print", "secrets"]
    assert "No keys in code." in user_messages(run_dir(ws, result), "reviewer/secrets")[0]


@pytest.mark.parametrize(
    ("review", "said"),
    [
        ({"checks": CHECKS}, "review: give exactly one of base"),
        ({"base": "main", "commit": "HEAD", "checks": CHECKS}, "(given: base, commit)"),
        ({"base": "nope", "checks": CHECKS}, "review.base: no such commit"),
        ({"commit": "deadbeef", "checks": CHECKS}, "review.commit: no such commit"),
        (
            {"base": "main", "checks": [CHECKS[0], CHECKS[0]]},
            "review: checks: names repeat: No print",
        ),
        ({"base": "main"}, "review.checks: no check to run"),
        (
            {"base": "main", "checks": [{"name": "x", "instructions": "y", "paths": ["!a"]}]},
            "review.checks[0].paths",
        ),
    ],
)
def test_bad_review_inputs_are_exit_2(
    ws: Path, capsys: pytest.CaptureFixture[str], review: dict[str, Any], said: str
) -> None:
    """docs/inputs.md, "Bad input": exit 2 naming the field, nothing run."""
    doc = {"review": review, "model": {"provider": "scripted", "script": {}}}
    code, out, err = orkeon(
        capsys, "run", "review", "--workspace", str(ws), "--inputs", json.dumps(doc)
    )
    assert code == 2 and out == "" and said in err and "Traceback" not in err
    assert not (ws / ".orkeon" / "runs").exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("No front matter here.\n", "no front matter"),
        ("---\nname: [unclosed\n---\nx\n", "the front matter is not YAML"),
        ("---\nname: No print\n---\nx\n", "check name 'No print' is given twice"),
        ("---\nname: a\ncolour: red\n---\nx\n", "unknown key in the front matter: colour"),
    ],
)
def test_a_broken_check_file_is_exit_2(
    ws: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    """docs/inputs.md, "Bad input": a check file with broken front matter: exit 2 naming
    the file."""
    check_file(ws, "bad.md", text)
    record_checks_trust(ws)
    doc = review_doc({}, CHECKS[:1])
    code, _, err = orkeon(
        capsys, "run", "review", "--workspace", str(ws), "--inputs", json.dumps(doc)
    )
    assert code == 2 and "bad.md" in err and said in err


def test_reports_junit_markdown_and_annotations(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/output.md, "checks": `orkeon report --format junit` one test case per check;
    Markdown one section per check, a suggestion as a GitHub suggestion block; on GitHub,
    annotations on the findings' lines and the checks in the job summary (docs/ci.md)."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(ws))
    script = {
        "reviewer/no-print": [
            verdict("fail", "prints", [finding("src/app.py", 2, end_line=3, suggestion="    pass")])
        ],
        "reviewer/docs": [verdict("pass", "fine")],
    }
    code, result, err = run_json(capsys, "review", ws, doc=review_doc(script))
    assert code == 1
    assert (
        "::error file=src/app.py,line=2,title=orkeon review%3A No print,endLine=3::no print" in err
    )
    assert "check `No print`: fail" in summary.read_text()
    rd = str(run_dir(ws, result))
    code, xml, _ = orkeon(capsys, "report", rd, "--format", "junit")
    assert code == 0
    assert '<testcase classname="orkeon.review.checks" name="No print"' in xml
    assert '<failure message="prints" type="check">src/app.py:2: error: no print</failure>' in xml
    assert '<testcase classname="orkeon.review.checks" name="docs" time="0.000" />' in xml
    code, md, _ = orkeon(capsys, "report", rd, "--format", "md")
    assert "#### ❌ check `No print`: fail" in md or "check `No print`: fail" in md
    assert "```suggestion\n    pass\n```" in md
    assert "check `docs`: pass" in md


def test_ci_trusts_check_files_through_the_environment(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/inputs.md, "review": `ORKEON_TRUST_PROJECT_HOOKS=1` trusts the check files in
    CI (stdin not a terminal)."""
    check_file(ws, "sec.md", "---\nname: secrets\n---\nNo keys in code.\n")
    monkeypatch.setenv("ORKEON_TRUST_PROJECT_HOOKS", "1")
    script = {"reviewer/secrets": [verdict("pass")]}
    code, result, _ = run_json(capsys, "review", ws, doc=review_doc(script, []))
    assert code == 0 and [c["name"] for c in result["checks"]] == ["secrets"]


def test_each_check_goes_to_anthropic_as_a_forced_answer(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/inputs.md, "review": a check's answer comes through the output-schema
    mechanism, the provider's structured mode included."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    answer = {"verdict": "fail", "summary": "prints", "findings": [finding("src/app.py", 2)]}
    with AnthropicFake() as server:
        server.push(anthropic_api.message(calls=[("c1", "final_answer", answer)]))
        model = {"provider": "anthropic", "model": "claude-sonnet-4-6",
                 "base_url": server.base_url, "max_retries": 0}  # fmt: skip
        doc = {**review_doc({}, CHECKS[:1]), "model": model}
        code, result, _ = run_json(capsys, "review", ws, doc=doc)
        (request,) = [r.body for r in server.requests]
    assert code == 1 and result["checks"][0]["findings"] == [finding("src/app.py", 2)]
    (tool,) = [t for t in request["tools"] if t["name"] == "final_answer"]
    assert tool["input_schema"]["required"] == ["verdict", "summary", "findings"]
    assert request["tool_choice"] == {"type": "any"}
