"""`orkeon report --format md`: what a person reads in a job summary or a PR comment.

The Markdown is rendered with markdown-it-py (CommonMark with GFM tables, raw HTML on,
as GitHub renders it) and the HTML that comes out is checked: the run's hostile text
never becomes a tag, a link, an image or a mention, and never closes a `<details>`."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from kit.report import HOSTILE, HOSTILE_NAME, Runs, make_runs, plan
from kit.steps import make_workspace, run_step, scripted, write
from markdown_it import MarkdownIt

from orkeon_run.report import render
from orkeon_run.report.markdown import LIMIT, MAX_REFUSED, code, fence


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory)


class Tags(HTMLParser):
    """The start tags of a rendered page, the text of each <code>, and table rows' cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.code_depth = 0
        self.code_text: list[str] = []
        self.outside_code: list[str] = []
        self.rows: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "code":
            self.code_depth += 1
            self.code_text.append("")
        elif tag == "tr":
            self.rows.append(0)
        elif tag in ("td", "th"):
            self.rows[-1] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self.code_depth -= 1

    def handle_data(self, data: str) -> None:
        if self.code_depth:
            self.code_text[-1] += data
        else:
            self.outside_code.append(data)


def rendered(text: str) -> Tags:
    parser = Tags()
    parser.feed(MarkdownIt("commonmark").enable("table").render(text))
    return parser


def test_the_failed_run_at_a_glance(runs: Runs) -> None:
    text = render(runs.mixed, "md")
    lines = text.splitlines()
    assert lines[0] == "### ❌ orkeon `dev-batches`: failed (exit 1)"
    assert "**Why:** `the audit of batch b1 failed: test -f src/a/missing.py`" in lines
    assert any(
        line.startswith("run `") and "7 calls, 4 refused · 6 turns" in line for line in lines
    )
    assert (
        "| `b1/a` | ✅ succeeded | 4 | 6 | 4 (`gate 1, hook 1, invalid 1, roots 1`) | 0 / 0 | $0.0000 |"
        in text
    )
    assert "| `b1/b` | ✅ succeeded | 2 | 1 | 0 | 0 / 0 | $0.0000 |" in text
    assert "| `b1` | ❌ failed | `failed: test -f src/a/missing.py` |" in text
    assert "```text\n[test -f src/a/missing.py exited 1]\n```" in text
    assert "<summary>4 refused calls, with the text the model read</summary>" in text
    assert "`b1/a` call 4 `file_write` `secret/key.txt`: refused by **gate**" in text
    assert "```text\n[refused by the gate: Write(secret/**)]\n```" in text
    assert "<summary>1 hook failure (the run went on)</summary>" in text


def test_hostile_text_stays_text(runs: Runs) -> None:
    text = render(runs.mixed, "md")
    page = rendered(text)
    # Only the report's own elements: no img, script, a or b from the run's text.
    assert set(page.tags) <= {"h3", "p", "strong", "code", "table", "thead", "tbody", "tr",
                              "th", "td", "details", "summary", "pre"}  # fmt: skip
    # audit output, the diff, refused calls, hook failures
    assert page.tags.count("details") == 4
    assert not any("@octocat" in t or "example.invalid" in t for t in page.outside_code)
    assert any(HOSTILE in t for t in page.code_text)  # the hook's refusal, whole
    assert any(HOSTILE_NAME in t for t in page.code_text)  # backtick and pipe included
    # role, audit, changed-file and hook rows: no pipe split a cell
    assert set(page.rows) == {8, 3, 4, 5}


def test_a_killed_run_says_it_has_no_result(runs: Runs) -> None:
    text = render(runs.killed, "md")
    assert text.startswith("### ⚠️ orkeon `dev-batches`: unfinished: no result, the run was killed")
    assert "(exit" not in text.splitlines()[0]
    assert "| `b1/a` | ⚠️ unfinished | 2 | 2 | 1 (`roots 1`) |" in text
    assert "[refused: src/b/nope.py is outside this role's roots (src/a/)]" in text


def test_cost_tokens_and_a_stopped_role(runs: Runs) -> None:
    text = render(runs.stopped, "md")
    assert "4,500 tokens · $0.0243" in text
    assert (
        "| `b1/a` | ❌ stopped: `a stops here` | 1 | 1 | 1 (`hook 1`) | 1,200 / 300 | $0.0081 |"
        in text
    )
    assert (
        "| `b1/b` | — | Stop `echo the stop hook broke >&2; exit 1` | 1 | `the stop hook broke` |"
        in text
    )


def test_a_long_run_stays_short_enough_for_a_comment(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"src/a/x.py": ""})
    many = [write(f"src/b/{i}/{'x' * 3000}.py", "") for i in range(MAX_REFUSED + 40)]
    doc = scripted({"b1/a": [{"tool_calls": many}, {"text": "done"}]}, plan=plan(("a", ["src/a/"])))
    run_step("dev-batches", doc, ws, run_dir=tmp_path / "run")
    text = render(tmp_path / "run", "md")
    assert len(text) < LIMIT
    assert "… and 40 more (`orkeon report --format html`)." in text
    assert text.count("refused by **roots**") == MAX_REFUSED
    assert "more characters in events.jsonl)" in text  # each text is clipped


@pytest.mark.parametrize(
    ("value", "table", "expected"),
    [
        ("plain", False, "`plain`"),
        ("a `tick`", False, "`` a `tick` ``"),
        ("`edge", False, "`` `edge ``"),
        ("a|b", True, "`a\\|b`"),
        ("a|b", False, "`a|b`"),
        ("two\nlines", False, "`two\\nlines`"),
        ("", False, "—"),
    ],
)
def test_code_spans(value: str, table: bool, expected: str) -> None:
    assert code(value, table=table) == expected


def test_a_fence_no_line_can_close() -> None:
    block = fence("```\n</details>\n````")
    assert block.startswith("`````text\n") and block.endswith("\n`````")
    page = rendered(f"<details><summary>s</summary>\n\n{block}\n\n</details>\n")
    assert page.tags == ["details", "summary", "pre", "code"]
