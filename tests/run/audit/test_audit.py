"""The audit after a batch (audit.py): what changed, against the roots, then build and test.

docs/inputs.md: "The audit compares the workspace after a batch with its state when
the batch began."
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from kit import git

from orkeon_run.jsonio import atomic_write_json, read_json
from orkeon_run.run import audit


def make_tree(ws: Path) -> None:
    (ws / "src" / "api").mkdir(parents=True)
    (ws / "src" / "api" / "a.py").write_text("a = 1\n")
    (ws / "src" / "web").mkdir()
    (ws / "src" / "web" / "w.py").write_text("w = 1\n")
    (ws / "README.md").write_text("# r\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    ws.mkdir()
    make_tree(ws)
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws.resolve()


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    ws = tmp_path / "plain"
    ws.mkdir()
    make_tree(ws)
    return ws.resolve()


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_changes_listed_and_orkeon_ignored(kind: str, request: pytest.FixtureRequest) -> None:
    ws: Path = request.getfixturevalue(kind)
    before = audit.snapshot(ws)
    assert before.git is (kind == "repo")
    (ws / "src" / "api" / "a.py").write_text("a = 2\n")  # modified
    (ws / "src" / "api" / "new" / "deep").mkdir(parents=True)
    (ws / "src" / "api" / "new" / "deep" / "n.py").write_text("")  # untracked, nested
    (ws / "README.md").unlink()  # deleted
    (ws / ".orkeon" / "runs").mkdir(parents=True)
    (ws / ".orkeon" / "runs" / "x.json").write_text("{}")  # orkeon's own
    assert audit.changed_paths(ws, before) == [
        "README.md",
        "src/api/a.py",
        "src/api/new/deep/n.py",
    ]


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_rewriting_the_same_content_is_no_change(kind: str, request: pytest.FixtureRequest) -> None:
    ws: Path = request.getfixturevalue(kind)
    before = audit.snapshot(ws)
    (ws / "src" / "web" / "w.py").write_text("w = 1\n")
    assert audit.changed_paths(ws, before) == []


def test_dirty_before_the_batch_counts_only_when_it_changes_again(repo: Path) -> None:
    (repo / "src" / "web" / "w.py").write_text("dirty before\n")
    (repo / "notes.txt").write_text("untracked before\n")
    before = audit.snapshot(repo)
    (repo / "src" / "api" / "a.py").write_text("a = 3\n")
    assert audit.changed_paths(repo, before) == ["src/api/a.py"]
    (repo / "notes.txt").write_text("changed again\n")
    assert audit.changed_paths(repo, before) == ["notes.txt", "src/api/a.py"]


def test_a_commit_during_the_batch_does_not_hide_its_files(repo: Path) -> None:
    before = audit.snapshot(repo)
    (repo / "src" / "web" / "w.py").write_text("w = 9\n")
    git(repo, "commit", "-q", "-am", "sneaky")
    assert audit.changed_paths(repo, before) == ["src/web/w.py"]


def test_workspace_in_a_subfolder_of_the_repository(repo: Path) -> None:
    ws = repo / "src"
    before = audit.snapshot(ws)
    assert before.git and before.prefix == "src/"
    (ws / "api" / "b.py").write_text("")
    (repo / "README.md").write_text("outside the workspace\n")
    assert audit.changed_paths(ws, before) == ["api/b.py"]


def test_run_dir_inside_the_workspace_is_ignored(plain: Path) -> None:
    run_dir = plain / "runs" / "r1"
    ignore = audit.ignore_list(plain, run_dir)
    assert ignore == (".orkeon/", "runs/r1/")
    before = audit.snapshot(plain, ignore)
    run_dir.mkdir(parents=True)
    (run_dir / "events.jsonl").write_text("{}\n")
    assert audit.changed_paths(plain, before) == []


def test_under_roots() -> None:
    assert audit.under("src/api/a.py", ["src/api/"])
    assert audit.under("src/api/a.py", ["./src/api"])
    assert audit.under("README.md", ["README.md"])
    assert audit.under("anything", ["."])
    assert not audit.under("src/apix/a.py", ["src/api"])
    assert not audit.under("src", ["src/api/"])


def run_audit(ws: Path, before: audit.Snapshot, **kw: object) -> dict:
    async def go() -> dict:
        return await audit.run_audit(ws, "b1", ["src/api/"], before, **kw)  # type: ignore[arg-type]

    return anyio.run(go)


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_change_outside_the_roots_fails_the_audit(
    kind: str, request: pytest.FixtureRequest
) -> None:
    ws: Path = request.getfixturevalue(kind)
    before = audit.snapshot(ws)
    (ws / "src" / "api" / "a.py").write_text("ok\n")
    (ws / "src" / "web" / "w.py").write_text("not yours\n")
    rec = run_audit(ws, before, build=[sys.executable, "-c", "raise SystemExit(0)"])
    assert rec == {
        "batch": "b1",
        "passed": False,
        "changed": 2,
        "outside_roots": ["src/web/w.py"],
        "failed_command": None,
        "output_tail": "changed outside the roots of batch b1 (src/api/):\n  src/web/w.py",
    }


def test_build_and_test_run_in_the_workspace(repo: Path) -> None:
    before = audit.snapshot(repo)
    ok = [sys.executable, "-c", "import os; assert os.path.isfile('README.md')"]
    assert run_audit(repo, before, build=ok, test=ok)["passed"] is True


def test_failing_build_stops_before_the_tests(repo: Path) -> None:
    before = audit.snapshot(repo)
    marker = repo / "tests-ran"
    build = [sys.executable, "-c", "import sys; print('compiling'); sys.exit('E: syntax error')"]
    test = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    rec = run_audit(repo, before, build=build, test=test)
    assert rec["passed"] is False
    assert rec["failed_command"] == build
    assert rec["outside_roots"] == []
    assert "compiling\nE: syntax error" in rec["output_tail"]
    assert rec["output_tail"].endswith("exited 1]")
    assert not marker.exists()


def test_failing_tests_keep_the_tail_of_long_output(repo: Path) -> None:
    before = audit.snapshot(repo)
    test = [sys.executable, "-c", "print('x' * 20000); print('FAILED test_api'); exit(3)"]
    rec = run_audit(repo, before, test=test)
    assert rec["failed_command"] == test
    assert len(rec["output_tail"]) <= audit.TAIL_CHARS
    assert "FAILED test_api" in rec["output_tail"]


def test_a_command_that_cannot_run_fails_the_audit(repo: Path) -> None:
    before = audit.snapshot(repo)
    rec = run_audit(repo, before, build=["no-such-program-xyz"])
    assert rec["passed"] is False
    assert "could not run" in rec["output_tail"]


def test_paths_only_when_commands_are_skipped(repo: Path) -> None:
    before = audit.snapshot(repo)
    rec = run_audit(repo, before, build=["false"], run_commands=False)
    assert rec["passed"] is True


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_snapshot_survives_state_json(kind: str, request: pytest.FixtureRequest) -> None:
    """A resumed batch is audited against the snapshot saved when it first began."""
    import json

    ws: Path = request.getfixturevalue(kind)
    (ws / "src" / "web" / "w.py").write_text("dirty before\n")
    before = audit.snapshot(ws)
    again = audit.Snapshot.from_json(json.loads(json.dumps(before.to_json())))
    assert again == before
    assert audit.changed_paths(ws, again) == []
    (ws / "src" / "web" / "w.py").write_text("changed\n")
    assert audit.changed_paths(ws, again) == ["src/web/w.py"]


def test_the_audits_git_runs_no_program_the_repository_config_names(repo: Path, tmp_path: Path):
    """A role can write .git/config with `cp`; the audit's own git must not then run the
    fsmonitor or hooks that config names (they would run outside every check)."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    git(repo, "config", "core.fsmonitor", str(script))
    (repo / "src" / "api" / "a.py").write_text("a = 2\n")
    assert audit.changed_paths(repo, before) == ["src/api/a.py"]
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["repo", "plain"])
@pytest.mark.parametrize(
    "guard",
    [".orkeon/hooks/pre.py", ".orkeon/settings.json", ".orkeon/crews/dev-batches.toml",
     ".orkeon/checks/security.md"],
)  # fmt: skip
def test_a_changed_guard_under_orkeon_is_outside_the_roots(kind, guard, request):
    """.orkeon/ holds orkeon's outputs (exempt) and the run's guards (not exempt)."""
    ws = request.getfixturevalue(kind)
    (ws / ".orkeon" / "hooks").mkdir(parents=True)
    (ws / ".orkeon" / "hooks" / "pre.py").write_text("import sys\nsys.exit(2)\n")
    before = audit.snapshot(ws, audit.ignore_list(ws, None))
    (ws / ".orkeon" / "spec.md").write_text("# spec\n")  # an output: exempt
    (ws / guard).parent.mkdir(parents=True, exist_ok=True)
    (ws / guard).write_text("# disarmed\n")
    record = anyio.run(lambda: audit.run_audit(ws, "b1", ["src/api/"], before))
    assert record["passed"] is False
    assert record["outside_roots"] == [guard]


def audit_of(ws: Path, roots: list[str], before: audit.Snapshot) -> dict[str, object]:
    return anyio.run(lambda: audit.run_audit(ws, "b1", roots, before))


@pytest.mark.parametrize("roots", [["src/api/"], ["."]])
@pytest.mark.parametrize(
    ("path", "text"),
    [(".git/config", "[alias]\n\tst = !touch /tmp/owned\n"),
     (".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/owned\n"),
     (".git/info/exclude", "src/web/\n")],
)  # fmt: skip
def test_a_changed_repository_guard_fails_the_audit_whatever_the_roots(
    repo: Path, roots: list[str], path: str, text: str
) -> None:
    """docs/security.md: "`cp` can still write `.git/config`, after which the role's own
    `git` calls run what it names": the audit names it, even when the roots are the whole
    workspace."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    target = repo / path
    target.write_text((target.read_text() if target.exists() else "") + text)
    record = audit_of(repo, roots, before)
    assert record["passed"] is False
    assert record["outside_roots"] == [path]
    assert "repository's configuration or hooks" in str(record["output_tail"])


def test_info_exclude_cannot_hide_a_change(repo: Path) -> None:
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("src/web/w2.py\n")
    (repo / "src" / "web" / "w2.py").write_text("hidden\n")
    record = audit_of(repo, ["src/api/"], before)
    assert record["outside_roots"] == [".git/info/exclude"]


def test_a_commit_inside_the_roots_fails_naming_the_refs(repo: Path) -> None:
    """docs/security.md, "The audit": a batch that made a commit fails its audit naming
    the ref, whatever made it (the history is never a role's work)."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    (repo / "src" / "api" / "a.py").write_text("a = 3\n")
    git(repo, "commit", "-q", "-am", "role's commit")
    record = audit_of(repo, ["src/api/"], before)
    assert record["passed"] is False
    branch = git(repo, "symbolic-ref", "HEAD").strip()
    assert record["outside_roots"] == ["HEAD", branch]
    assert "changed the repository's history" in record["output_tail"]


def test_repository_guards_from_a_workspace_in_a_subfolder(repo: Path) -> None:
    ws = repo / "src"
    before = audit.snapshot(ws, audit.ignore_list(ws, None))
    assert "../.git/config" in before.guards
    with (repo / ".git" / "config").open("a") as f:
        f.write("[core]\n\tfsmonitor = /tmp/x\n")
    record = audit_of(ws, ["api/"], before)
    assert record["outside_roots"] == ["../.git/config"]


def test_repository_guards_of_a_linked_worktree(repo: Path, tmp_path: Path) -> None:
    """In a linked worktree the config and hooks live in the main repository's git
    folder (--git-common-dir); the worktree's own folder holds config.worktree."""
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    before = audit.snapshot(wt.resolve(), audit.ignore_list(wt, None))
    config = os.path.relpath(repo / ".git" / "config", wt.resolve())
    assert config in before.guards
    (repo / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    record = audit_of(wt.resolve(), ["src/"], before)
    assert record["outside_roots"] == [
        os.path.relpath(repo / ".git/hooks/post-checkout", wt.resolve())
    ]


def test_a_snapshot_saved_before_guards_existed_checks_no_guard(repo: Path) -> None:
    """A run started by an older orkeon saved its snapshot without `guards`: resumed, its
    audit must not report every guard file as changed."""
    import json

    saved = audit.snapshot(repo, audit.ignore_list(repo, None)).to_json()
    del saved["guards"]
    old = audit.Snapshot.from_json(json.loads(json.dumps(saved)))
    assert old.guards is None
    assert audit.tampered(repo, old) == []
    assert audit_of(repo, ["src/api/"], old)["passed"] is True


def test_a_git_folder_appearing_in_a_plain_workspace_is_a_change(plain: Path) -> None:
    before = audit.snapshot(plain, audit.ignore_list(plain, None))
    assert before.git is False
    git(plain, "init", "-q")
    (plain / ".git" / "info").mkdir(exist_ok=True)
    (plain / ".git" / "info" / "exclude").write_text("*\n")
    (plain / "README.md").write_text("changed\n")
    assert audit.changed_paths(plain, before) == [".git", "README.md"]
    # The step keeps its first mode: still hashes, not a git status that ignores `*`.
    again = audit.snapshot(plain, audit.ignore_list(plain, None), git=False)
    assert again.git is False
    (plain / "src" / "web" / "w.py").write_text("changed\n")
    assert audit.changed_paths(plain, again) == ["src/web/w.py"]


def test_a_git_step_whose_repository_went_away_cannot_snapshot(repo: Path) -> None:
    import shutil

    shutil.rmtree(repo / ".git")
    with pytest.raises(audit.AuditError):
        audit.snapshot(repo, git=True)


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_hidden_from_git_status_by_an_index_flag_is_still_seen(
    repo: Path, flag: str
) -> None:
    """Review finding: `git update-index --assume-unchanged README.md`, then a change to
    README.md, and git status said nothing."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    git(repo, "update-index", flag, "README.md")
    (repo / "README.md").write_text("changed unseen\n")
    assert git(repo, "status", "--porcelain") == ""  # what git itself reports
    record = audit_of(repo, ["src/api/"], before)
    assert record["outside_roots"] == ["README.md"]


def test_a_gitignore_that_ignores_itself_is_seen(repo: Path) -> None:
    """Review finding: `docs/.gitignore` holding `*` hid itself and every new file beside
    it from git status."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    (repo / "docs").mkdir()
    (repo / "docs" / ".gitignore").write_text("*\n")
    (repo / "docs" / "new.md").write_text("hidden\n")
    assert git(repo, "status", "--porcelain") == ""
    record = audit_of(repo, ["src/api/"], before)
    assert record["outside_roots"] == ["docs/.gitignore"]


def test_a_gitignore_inside_the_roots_passes(repo: Path) -> None:
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    (repo / "src" / "api" / ".gitignore").write_text("*\n")
    (repo / "src" / "api" / "build.out").write_text("x\n")
    assert audit_of(repo, ["src/api/"], before)["passed"] is True


def test_the_gitignore_pytest_writes_in_its_cache_is_not_a_change(repo: Path) -> None:
    """A role that runs pytest at the top of the workspace creates `.pytest_cache/` with a
    `.gitignore` of `*` in it: that hides only the cache, and must not fail the audit."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    cache = repo / ".pytest_cache"
    (cache / "v" / "cache").mkdir(parents=True)
    (cache / ".gitignore").write_text("# Created by pytest automatically.\n*\n")  # its text
    (cache / "v" / "cache" / "nodeids").write_text("[]\n")
    (repo / ".github").mkdir()
    assert audit_of(repo, ["src/api/"], before)["passed"] is True
    (repo / ".github" / ".gitignore").write_text("*\n")  # not a tool's folder
    assert audit_of(repo, ["src/api/"], before)["outside_roots"] == [".github/.gitignore"]


def test_git_replace_cannot_hide_a_change_to_a_tracked_file(repo: Path) -> None:
    """Second review: a changed index written as a tree and put in place of HEAD's tree
    with `git replace`, and git status read clean."""
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    (repo / "README.md").write_text("evil\n")
    git(repo, "update-index", "README.md")
    tree = git(repo, "write-tree").strip()
    git(repo, "replace", git(repo, "rev-parse", "HEAD^{tree}").strip(), tree)
    assert git(repo, "status", "--porcelain") == ""  # what git itself reports
    assert audit_of(repo, ["src/api/"], before)["outside_roots"] == ["README.md"]


def test_a_workspace_folder_whose_name_starts_with_a_space(repo: Path) -> None:
    ws = repo / " ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    before = audit.snapshot(ws, audit.ignore_list(ws, None))
    assert before.prefix == " ws/"
    (ws / "outside.txt").write_text("x\n")
    assert audit_of(ws, ["src/"], before)["outside_roots"] == ["outside.txt"]


def test_an_ignore_file_above_the_workspace_or_in_home_is_a_guard(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Second review: from a workspace in a subfolder, `../.gitignore` (or the user's
    global ignore file) could hide every new file."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ws = repo / "src"
    before = audit.snapshot(ws, audit.ignore_list(ws, None))
    with (repo / ".gitignore").open("a") as f:
        f.write("*\n!*/\n")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*\n")
    (ws / "web" / "new.py").write_text("hidden\n")
    record = audit_of(ws, ["api/"], before)
    assert record["outside_roots"] == ["../.gitignore", str(home / ".config/git/ignore")]


def test_git_gc_writing_info_refs_is_not_a_change(repo: Path) -> None:
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    git(repo, "gc", "-q")
    assert (repo / ".git" / "info" / "refs").exists()
    assert audit_of(repo, ["src/api/"], before)["passed"] is True


def test_a_tool_folder_gitignore_deeper_down_or_in_an_ignored_folder(repo: Path) -> None:
    """tox writes `.tox/py313/.gitignore`; a venv may be named `env`; a .gitignore inside
    a folder the repository already ignores hides nothing more."""
    (repo / ".gitignore").write_text("node_modules/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore node_modules")
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    for folder in (".tox/py313", "env", "node_modules/pkg"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / ".gitignore").write_text("*\n")
    assert audit_of(repo, ["src/api/"], before)["passed"] is True


@pytest.mark.parametrize("kind", ["repo", "plain"])
def test_a_file_name_that_is_not_utf8_is_fingerprinted(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Second review: git's output was read as UTF-8 with replacement, so `bad\\xff.py`
    was fingerprinted as missing before and after, and a change to it passed."""
    ws: Path = request.getfixturevalue(kind)
    bad = os.fsdecode(b"bad\xff.py")
    (ws / bad).write_text("dirty before\n")
    before = audit.snapshot(ws, audit.ignore_list(ws, None))
    # Through state.json and back (a resumed batch), the name still names the file.
    atomic_write_json(ws.parent / "state.json", before.to_json())
    before = audit.Snapshot.from_json(read_json(ws.parent / "state.json"))
    (ws / bad).write_text("changed\n")
    record = audit_of(ws, ["src/api/"], before)
    assert record["outside_roots"] == ["bad\\xff.py"]
    json.dumps(record, ensure_ascii=False).encode("utf-8")  # plain text wherever written


def test_a_submodules_own_exclude_file_is_a_guard(repo: Path, tmp_path: Path) -> None:
    """Second review: `.git/modules/lib/info/exclude` holding `*` hid new files in the
    submodule `lib`."""
    lib = tmp_path / "libsrc"
    lib.mkdir()
    (lib / "l.py").write_text("l = 1\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "add lib")
    before = audit.snapshot(repo, audit.ignore_list(repo, None))
    exclude = repo / ".git" / "modules" / "lib" / "info" / "exclude"
    assert ".git/modules/lib/config" in before.guards
    exclude.parent.mkdir(exist_ok=True)
    with exclude.open("a") as f:
        f.write("*\n")
    (repo / "lib" / "evil.py").write_text("hidden\n")
    record = audit_of(repo, ["src/api/"], before)
    assert record["outside_roots"] == [".git/modules/lib/info/exclude"]
