"""`orkeon report` of a pipeline's run directory lists the steps the pipeline ran, in
order, a repair included (docs/output.md, "orkeon report"). A real pipeline run (scripted
model, a real hook script refusing b1's first write) is reported in md, html and json."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from kit.cli import (
    clean_environment,
    orkeon,
    pipeline_doc,
    refusing_hook,
    run_dir,
    run_json,
    with_hook,
)
from kit.steps import make_workspace

ORDER = ["dev-spec", "dev-plan", "dev-batches", "tasks-repair-1", "dev-batches"]


@pytest.fixture
def repaired_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Path:
    clean_environment(tmp_path, monkeypatch)
    ws = make_workspace(tmp_path, {"README.md": "# demo\n"})
    command, program = refusing_hook(tmp_path, once=True)
    code, result, _ = run_json(
        capsys, "pipeline", ws, doc=with_hook(pipeline_doc(), command, program)
    )
    assert code == 0, result["error"]
    return run_dir(ws, result)


def test_json_lists_each_step_with_its_status_counts_and_records(repaired_run, capsys):
    code, out, err = orkeon(capsys, "report", str(repaired_run), "--format", "json")
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert [s["name"] for s in steps] == ORDER
    assert [s["status"] for s in steps] == [
        "succeeded", "succeeded", "failed", "succeeded", "succeeded"
    ]  # fmt: skip
    assert [s["exit_code"] for s in steps] == [0, 0, 1, 0, 0]
    first_batches = steps[2]
    assert first_batches["calls"] == 1 and first_batches["refused"] == 1
    assert "the audit of batch b1 failed" in first_batches["error"]
    assert [s["run_dir"] for s in steps][:4] == [
        "steps/dev-spec", "steps/dev-plan", "steps/dev-batches", "steps/tasks-repair-1"
    ]  # fmt: skip
    for s in steps:
        assert (repaired_run / s["run_dir"] / "result.json").is_file()


def test_markdown_has_one_row_per_step_in_order(repaired_run, capsys):
    code, out, err = orkeon(capsys, "report", str(repaired_run), "--format", "md")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("| `") and "steps/" in line]
    assert [row.split("`")[1] for row in rows] == ORDER
    assert "❌ failed: `every call of role b1/api was refused" in rows[2]


class _Sections(HTMLParser):
    """The text of each row of the table in <section id="steps">."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.rows = False, []

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.inside = dict(attrs).get("id") == "steps"
        elif tag == "tr" and self.inside:
            self.rows.append("")

    def handle_data(self, data):
        if self.inside and self.rows:
            self.rows[-1] += data


def test_html_has_a_steps_section_in_order(repaired_run, tmp_path, capsys):
    page = tmp_path / "report.html"
    code, _, err = orkeon(capsys, "report", str(repaired_run), "--format", "html", "-o", str(page))
    assert code == 0, err
    parser = _Sections()
    parser.feed(page.read_text())
    names = [row.split()[0] for row in parser.rows[1:]]  # the first row is the head
    assert names == ORDER


def test_a_single_step_run_has_no_steps_section(tmp_path, monkeypatch, capsys):
    clean_environment(tmp_path, monkeypatch)
    ws = make_workspace(tmp_path, {"README.md": "# demo\n"})
    doc = pipeline_doc()
    code, result, _ = run_json(capsys, "dev-spec", ws, doc=doc)
    assert code == 0, result["error"]
    code, out, _ = orkeon(capsys, "report", str(run_dir(ws, result)), "--format", "json")
    assert json.loads(out)["steps"] == []
    code, out, _ = orkeon(capsys, "report", str(run_dir(ws, result)), "--format", "md")
    assert "| step |" not in out
