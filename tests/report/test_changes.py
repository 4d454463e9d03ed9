"""What changed, in every report (docs/output.md, "Changes"): "the HTML report gets a
Changes section (files changed per batch and role, with a diff, syntax-highlighted,
collapsible, large diffs cut with a note) and shows the model's own text per turn; the
Markdown report lists the changed files with +/- counts and, for small changes, the diff;
`orkeon report --format patch` prints the run's change."

Each run is a real dev-batches step on a git workspace in tmp_path with the scripted
model; the patch is proved by `git apply` on a clean copy of the workspace."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kit import git
from kit.cli import orkeon
from kit.steps import make_workspace, run_step, scripted, write

from orkeon_run.report import render
from orkeon_run.report.html_changes import FILE_LINES
from orkeon_run.report.load import load

HOSTILE = "<script>document.body.setAttribute('data-pwned','1')</script> ``` </details>"
START = {
    "README.md": "# app\n\nold line\n",
    "src/a/mod.py": "def f():\n    return 1\n",
    "src/b/x.txt": "b\n",
}


def plan() -> dict[str, object]:
    return {
        "title": "t",
        "batches": [
            {"name": "b1", "roles": [
                {"name": "a", "roots": ["src/a/"], "task": "a"},
                {"name": "b", "roots": ["src/b/"], "task": "b"},
            ]},
            {"name": "b2", "roles": [{"name": "docs", "roots": ["README.md"], "task": "d"}]},
        ],
    }  # fmt: skip


def doc(**script: object) -> dict[str, object]:
    return scripted(script, plan=plan(), audit={"build": None, "test": None})


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A run whose roles add, modify and re-modify files, one of them holding hostile text;
    README.md was left uncommitted before the run. (workspace, run dir, a clean copy of
    the workspace as the run found it)."""
    ws = make_workspace(tmp_path, START)
    (ws / "README.md").write_text("# app\n\nold line\nuncommitted\n")
    clean = tmp_path / "clean"
    shutil.copytree(ws, clean)
    d = doc(**{
        "b1/a": [
            {"tool_calls": [write("src/a/mod.py", "def f():\n    return 2\n"),
                            write("src/a/new.py", f"# {HOSTILE}\nX = 1\n")]},
            {"text": "I changed f to return 2 and added new.py."},
        ],
        "b1/b": [{"tool_calls": [write("src/b/x.txt", "b\nmore\n")]}],
        "b2/docs": [{"tool_calls": [write("README.md", "# app\n\nnew line\nuncommitted\n")]}],
    })  # fmt: skip
    rd = tmp_path / "run"
    result = run_step("dev-batches", d, ws, run_dir=rd)
    assert result["status"] == "succeeded", result
    return ws, rd, clean


def test_each_batch_is_recorded_with_its_roles_and_counts(run: tuple[Path, Path, Path]) -> None:
    _, rd, _ = run
    lines = [json.loads(x) for x in (rd / "changes.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "start" and list(lines[0]["files"]) == ["README.md"]
    b1, b2 = lines[1], lines[2]
    assert (b1["batch"], b2["batch"]) == ("b1", "b2")
    got = {f["path"]: (f["roles"], f["status"], f["added"], f["removed"]) for f in b1["files"]}
    assert got == {
        "src/a/mod.py": (["b1/a"], "modified", 1, 1),
        "src/a/new.py": (["b1/a"], "added", 2, 0),
        "src/b/x.txt": (["b1/b"], "modified", 1, 0),
    }
    # README.md was uncommitted when the step began: its change is against that content.
    (readme,) = b2["files"]
    assert (readme["roles"], readme["added"], readme["removed"]) == (["b2/docs"], 1, 1)


def test_the_patch_applies_to_the_workspace_as_the_run_found_it(
    run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, rd, clean = run
    code, out, err = orkeon(capsys, "report", str(rd), "--format", "patch")
    assert code == 0, err
    assert out.startswith("diff --git a/README.md b/README.md\n")
    (clean / "run.patch").write_text(out)
    done = subprocess.run(["git", "apply", "run.patch"], cwd=clean, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for rel in ("README.md", "src/a/mod.py", "src/a/new.py", "src/b/x.txt"):
        assert (clean / rel).read_bytes() == (ws / rel).read_bytes(), rel


def test_markdown_lists_the_files_and_shows_a_small_diff_inert(
    run: tuple[Path, Path, Path],
) -> None:
    _, rd, _ = run
    md = render(rd, "md")
    assert "| `b1` | `src/a/mod.py` | modified +1 −1 | `b1/a` |" in md
    assert "| `b2` | `README.md` | modified +1 −1 | `b2/docs` |" in md
    assert "<details><summary>The diff</summary>" in md
    # The hostile line sits inside a fence longer than any backtick run it holds.
    fence_open = md.index("diff\ndiff --git")
    ticks = md[md.rindex("\n", 0, fence_open) + 1 : fence_open]
    assert set(ticks) == {"`"} and len(ticks) >= 4
    assert f"+# {HOSTILE}" in md


def test_html_has_the_changes_per_role_highlighted_and_the_model_text(
    run: tuple[Path, Path, Path],
) -> None:
    _, rd, _ = run
    page = render(rd, "html")
    section = page[page.index('<section id="changes">') : page.index('<section id="texts">')]
    assert section.index("<code>b1/a</code>") < section.index("<code>src/a/mod.py</code>")
    assert section.index("<code>b1/b</code>") < section.index("<code>src/b/x.txt</code>")
    assert '<details class="file"><summary><code>src/a/new.py</code>' in section
    assert '<span class="dd">-' in section and '<span class="da">+' in section
    assert '<span class="tk">return</span>' in section  # Python keywords coloured
    assert "<script>document" not in section and "&lt;script&gt;document" in section
    texts = page[page.index('<section id="texts">') :]
    assert "I changed f to return 2 and added new.py." in texts


def test_a_large_diff_is_cut_with_a_note(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, START)
    big = "".join(f"line {i}\n" for i in range(FILE_LINES + 500))
    rd = tmp_path / "run"
    run_step(
        "dev-batches",
        doc(**{"b1/a": [{"tool_calls": [write("src/a/big.txt", big)]}]}),
        ws,
        run_dir=rd,
    )
    page = render(rd, "html")
    assert "Cut: 5" in page and "more lines of this diff (the patch has all of it)" in page
    md = render(rd, "md")
    assert "<summary>The diff</summary>" not in md and "--format patch" in md
    assert render(rd, "patch").count("\n+line ") == FILE_LINES + 500


def test_secrets_in_a_changed_file_are_redacted_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's redactor (docs/security.md) covers the stored contents too."""
    secret = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("SERVICE_API_TOKEN", secret)
    ws = make_workspace(tmp_path, START)
    rd = tmp_path / "run"
    script = {"b1/a": [{"tool_calls": [write("src/a/conf.py", f"TOKEN = '{secret}'\n")]}]}
    run_step("dev-batches", doc(**script), ws, run_dir=rd)
    for fmt in ("md", "html", "patch"):
        out = render(rd, fmt)
        assert "[redacted]" in out and secret not in out, fmt
    assert not any(
        secret.encode() in p.read_bytes() for p in (rd / "changes").rglob("*") if p.is_file()
    )


def test_a_binary_file_goes_into_the_patch(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, START)
    rd = tmp_path / "run"
    clean = tmp_path / "clean"
    shutil.copytree(ws, clean)
    blob = bytes(range(256)).decode("latin-1")  # written by the tool as UTF-8 text
    run_step(
        "dev-batches",
        doc(**{"b1/a": [{"tool_calls": [write("src/a/b.dat", "\0" + blob)]}]}),
        ws,
        run_dir=rd,
    )
    (f,) = [f for b in load(rd).changes for f in b.files]
    assert f.binary and "binary" in render(rd, "md")
    (clean / "p.patch").write_text(render(rd, "patch"), errors="surrogateescape")
    git(clean, "apply", "p.patch")
    assert (clean / "src/a/b.dat").read_bytes() == (ws / "src/a/b.dat").read_bytes()


def test_no_git_lists_files_without_a_diff(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, START, git=False)
    rd = tmp_path / "run"
    run_step(
        "dev-batches",
        doc(**{"b1/a": [{"tool_calls": [write("src/a/mod.py", "y\n")]}]}),
        ws,
        run_dir=rd,
    )
    page = render(rd, "html")
    assert "<code>src/a/mod.py</code>" in page and "Its content was not kept" in page
    assert render(rd, "patch") == ""
